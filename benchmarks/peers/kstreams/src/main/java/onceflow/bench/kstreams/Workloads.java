package onceflow.bench.kstreams;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.apache.kafka.streams.state.Stores;

/** The two benchmark topologies, built with the Processor API. */
final class Workloads {
    /** Header naming the input record of an output: topic/partition/offset (onceflow's lineage header). */
    static final String SOURCE_HEADER = "onceflow-source";
    /** Header with the reason on a rejected record. */
    static final String REJECT_REASON_HEADER = "onceflow-reject-reason";
    /** Header carrying the event id of an orders event. */
    static final String EVENT_ID_HEADER = "event-id";

    static final String STORE_EVENT_IDS = "event-ids";
    static final String STORE_ORDER_VERSIONS = "order-versions";
    static final String STORE_ORDER_AMOUNTS = "order-amounts";
    static final String STORE_CUSTOMER_TOTALS = "customer-totals";

    static final String SINK_OUTPUT = "output";
    static final String SINK_REJECTED = "rejected";

    /** Records processed by every task of this instance, for the progress line. */
    static final LongAdder PROCESSED = new LongAdder();
    /** System.nanoTime() when the first record was processed (0: none yet). */
    static final AtomicLong FIRST_NANOS = new AtomicLong();
    /** System.nanoTime() when the latest record was processed. */
    static volatile long lastNanos;

    /** Counts one processed record. */
    static void processed() {
        PROCESSED.increment();
        long now = System.nanoTime();
        if (FIRST_NANOS.get() == 0) {
            FIRST_NANOS.compareAndSet(0, now);
        }
        lastNanos = now;
    }

    private Workloads() {}

    /** The rejected-records topic of an application, as onceflow names it. */
    static String rejectedTopic(String appId) {
        return appId + "-rejected";
    }

    /** copy: input to output, key and value bytes and timestamp unchanged, plus the source header. */
    static Topology copy(String input, String output) {
        Topology t = new Topology();
        t.addSource("source", Serdes.ByteArray().deserializer(), Serdes.ByteArray().deserializer(), input);
        t.addProcessor("copy", CopyProcessor::new, "source");
        t.addSink(SINK_OUTPUT, output, Serdes.ByteArray().serializer(), Serdes.ByteArray().serializer(), "copy");
        return t;
    }

    /**
     * orders: the dedup gate, the version gate and per-customer totals in one processor with four
     * persistent (RocksDB), changelogged key-value stores: the store builders' defaults.
     */
    static Topology orders(String input, String output, String rejected) {
        Topology t = new Topology();
        t.addSource("source", Serdes.String().deserializer(), Serdes.ByteArray().deserializer(), input);
        t.addProcessor("orders", OrdersProcessor::new, "source");
        t.addStateStore(Stores.keyValueStoreBuilder(
                Stores.persistentKeyValueStore(STORE_EVENT_IDS), Serdes.Bytes(), Serdes.ByteArray()), "orders");
        t.addStateStore(Stores.keyValueStoreBuilder(
                Stores.persistentKeyValueStore(STORE_ORDER_VERSIONS), Serdes.String(), Serdes.Long()), "orders");
        t.addStateStore(Stores.keyValueStoreBuilder(
                Stores.persistentKeyValueStore(STORE_ORDER_AMOUNTS), Serdes.String(), Serdes.Long()), "orders");
        t.addStateStore(Stores.keyValueStoreBuilder(
                Stores.persistentKeyValueStore(STORE_CUSTOMER_TOTALS), Serdes.String(), Serdes.Long()), "orders");
        t.addSink(SINK_OUTPUT, output, Serdes.String().serializer(), Serdes.Long().serializer(), "orders");
        t.addSink(SINK_REJECTED, rejected, Serdes.String().serializer(), Serdes.ByteArray().serializer(), "orders");
        return t;
    }

    /** A copy of the record's headers with the source header added. */
    static Headers withSource(ProcessorContext<?, ?> ctx, Headers in) {
        RecordHeaders h = new RecordHeaders(in.toArray());
        RecordMetadata m = ctx.recordMetadata()
                .orElseThrow(() -> new IllegalStateException("no record metadata for a source record"));
        String src = m.topic() + "/" + m.partition() + "/" + m.offset();
        h.add(SOURCE_HEADER, src.getBytes(StandardCharsets.UTF_8));
        return h;
    }

    /** The copy workload's processor. */
    static final class CopyProcessor implements Processor<byte[], byte[], byte[], byte[]> {
        private ProcessorContext<byte[], byte[]> ctx;

        @Override
        public void init(ProcessorContext<byte[], byte[]> context) {
            ctx = context;
        }

        @Override
        public void process(Record<byte[], byte[]> r) {
            ctx.forward(r.withHeaders(withSource(ctx, r.headers())));
            processed();
        }
    }
}
