"""Confluent's own serializers (confluent-kafka-python 2.16.1,
pip install 'confluent-kafka[avro,protobuf,json]==2.16.1') with their in-memory
registry client, for serde/registry's wire-format tests.

  python gen.py              writes golden.txt's lines: case name, schema id,
                             the bytes Confluent's serializer wrote, in hex
  python gen.py decode NAME HEX
                             reads HEX with Confluent's deserializer for case
                             NAME and prints the value
"""
import sys

from confluent_kafka.schema_registry._sync.mock_schema_registry_client import MockSchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, timestamp_pb2

PAYMENT = ('{"type":"record","name":"Payment","namespace":"shop","fields":['
           '{"name":"id","type":"string"},{"name":"amount","type":"long"}]}')
PAYMENT_JSON = ('{"$schema":"http://json-schema.org/draft-07/schema#","title":"Payment","type":"object",'
                '"properties":{"id":{"type":"string"},"amount":{"type":"integer"}},"required":["id","amount"]}')
PROTO = {"use.deprecated.format": False}


def ctx(topic):
    return SerializationContext(topic, MessageField.VALUE)


def main():
    # Registering in this order gives the ids 1, 2, 3, 4.
    sr = MockSchemaRegistryClient({"url": "mock://golden"})
    cases = [
        ("avro-payment", AvroSerializer(sr, PAYMENT)({"id": "a1", "amount": 150}, ctx("payments"))),
        ("protobuf-timestamp", ProtobufSerializer(timestamp_pb2.Timestamp, sr, conf=PROTO)(
            timestamp_pb2.Timestamp(seconds=1, nanos=2), ctx("ts"))),
        ("protobuf-extension-range", ProtobufSerializer(descriptor_pb2.DescriptorProto.ExtensionRange, sr, conf=PROTO)(
            descriptor_pb2.DescriptorProto.ExtensionRange(start=3), ctx("ranges"))),
        ("json-payment", JSONSerializer(PAYMENT_JSON, sr)({"id": "a1", "amount": 150}, ctx("payments-json"))),
    ]
    if len(sys.argv) == 1:
        for name, b in cases:
            print(name, int.from_bytes(b[1:5], "big"), b.hex())
        return
    _, verb, name, data = sys.argv
    assert verb == "decode", verb
    b = bytes.fromhex(data)
    if name == "avro-payment":
        v = AvroDeserializer(sr)(b, ctx("payments"))
        print(f"{v['id']} {v['amount']}")
    elif name == "protobuf-timestamp":
        v = ProtobufDeserializer(timestamp_pb2.Timestamp, PROTO)(b, ctx("ts"))
        print(f"{v.seconds} {v.nanos}")
    elif name == "protobuf-extension-range":
        v = ProtobufDeserializer(descriptor_pb2.DescriptorProto.ExtensionRange, PROTO)(b, ctx("ranges"))
        print(f"{v.start}")
    elif name == "json-payment":
        v = JSONDeserializer(PAYMENT_JSON, schema_registry_client=sr)(b, ctx("payments-json"))
        print(f"{v['id']} {v['amount']}")
    else:
        sys.exit(f"unknown case {name}")


main()
