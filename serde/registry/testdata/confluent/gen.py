"""Writes golden.txt: records serialized by Confluent's own serializers
(confluent-kafka-python 2.16.1, pip install 'confluent-kafka[avro,protobuf]==2.16.1')
with its in-memory registry client, for serde/registry's wire-format test.
Each line: case name, schema id the serializer was given, bytes in hex.
Run: python gen.py > golden.txt
"""
from confluent_kafka.schema_registry._sync.mock_schema_registry_client import MockSchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import SerializationContext, MessageField
from google.protobuf import descriptor_pb2, timestamp_pb2

PAYMENT = ('{"type":"record","name":"Payment","namespace":"shop","fields":['
           '{"name":"id","type":"string"},{"name":"amount","type":"long"}]}')

sr = MockSchemaRegistryClient({"url": "mock://golden"})


def ctx(topic):
    return SerializationContext(topic, MessageField.VALUE)


def emit(name, b):
    print(name, int.from_bytes(b[1:5], "big"), b.hex())


emit("avro-payment", AvroSerializer(sr, PAYMENT)({"id": "a1", "amount": 150}, ctx("payments")))
proto = {"use.deprecated.format": False}
emit("protobuf-timestamp", ProtobufSerializer(timestamp_pb2.Timestamp, sr, conf=proto)(
    timestamp_pb2.Timestamp(seconds=1, nanos=2), ctx("ts")))
emit("protobuf-extension-range", ProtobufSerializer(descriptor_pb2.DescriptorProto.ExtensionRange, sr, conf=proto)(
    descriptor_pb2.DescriptorProto.ExtensionRange(start=3), ctx("ranges")))
