package onceflow.bench.kstreams;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.TimestampExtractor;
import org.apache.kafka.streams.state.WindowStore;

/**
 * pageviews: views per user per hour with 5 minutes of grace, final results only (emit on window
 * close), event time from the value's "at" field: onceflow's examples/pageviews. Keys are written as
 * onceflow's topology.WindowedCodec writes them (the user, then start and end, 8-byte big-endian
 * milliseconds), counts as 8-byte big-endian longs. Late views are dropped and counted in Kafka
 * Streams' dropped-records metric (onceflow rejects them to its rejected topic).
 */
final class Pageviews {
    static final String STORE = "views-per-user-hour";
    /** Kafka Streams' InternalConfig.EMIT_INTERVAL_MS_KSTREAMS_WINDOWED_AGGREGATION. */
    static final String EMIT_INTERVAL_CONFIG = "__emit.interval.ms.kstreams.windowed.aggregation__";
    private static final JsonFactory JSON = new JsonFactory();

    private Pageviews() {}

    static Topology topology(String input, String output) {
        StreamsBuilder b = new StreamsBuilder();
        b.stream(input, Consumed.with(Serdes.String(), Serdes.ByteArray()).withTimestampExtractor(new ViewTime()))
                .peek((k, v) -> Workloads.processed())
                .groupByKey(Grouped.with(Serdes.String(), Serdes.ByteArray()))
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofHours(1), Duration.ofMinutes(5)))
                .emitStrategy(EmitStrategy.onWindowClose())
                .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as(STORE)
                        .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
                .toStream()
                .map((w, n) -> KeyValue.pair(windowedKey(w), n))
                .to(output, Produced.with(Serdes.ByteArray(), Serdes.Long()));
        return b.build();
    }

    /** The user's bytes, then the window's start and end in milliseconds, 8 bytes big-endian each. */
    static byte[] windowedKey(Windowed<String> w) {
        byte[] k = w.key().getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(k.length + 16).put(k).putLong(w.window().start()).putLong(w.window().end()).array();
    }

    /** Event time: the value's "at" (milliseconds); the record's timestamp when it has none. */
    static final class ViewTime implements TimestampExtractor {
        @Override
        public long extract(ConsumerRecord<Object, Object> r, long partitionTime) {
            Object v = r.value();
            if (v instanceof byte[] b) {
                try (JsonParser p = JSON.createParser(b)) {
                    if (p.nextToken() == JsonToken.START_OBJECT) {
                        JsonToken t;
                        while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
                            String name = p.currentName();
                            t = p.nextToken();
                            if (name.equals("at") && t == JsonToken.VALUE_NUMBER_INT) {
                                return p.getLongValue();
                            }
                            p.skipChildren();
                        }
                    }
                } catch (IOException e) {
                    // not a view: the record's own timestamp
                }
            }
            return r.timestamp();
        }
    }
}
