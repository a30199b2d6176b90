package onceflow.bench.kstreams;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The orders workload, with the semantics of onceflow's orders topology (examples/orders), per
 * record in order:
 *
 * <ol>
 *   <li>an undecodable value is rejected (undecodable), one without an event-id header too
 *       (processing-error), both before any state is touched;
 *   <li>dedup on the event-id header: the first time the id is remembered with the SHA-256 of the
 *       value and the record goes on; the same hash again is rejected (duplicate), another hash
 *       (conflict). An id stays remembered when a later gate rejects the record;
 *   <li>version gate per order id: only a version above the last accepted one goes on, else
 *       rejected (stale);
 *   <li>accepted: the order's amount becomes the record's, the customer's total moves by the
 *       difference, and (customer, total) goes to the output.
 * </ol>
 *
 * Outputs and rejections carry the input's headers plus onceflow-source; rejections keep the input
 * key and value and add onceflow-reject-reason.
 */
final class OrdersProcessor implements Processor<String, byte[], String, Object> {
    private ProcessorContext<String, Object> ctx;
    private KeyValueStore<Bytes, byte[]> eventIds;
    private KeyValueStore<String, Long> versions;
    private KeyValueStore<String, Long> amounts;
    private KeyValueStore<String, Long> totals;
    private MessageDigest sha256;

    @Override
    public void init(ProcessorContext<String, Object> context) {
        ctx = context;
        eventIds = context.getStateStore(Workloads.STORE_EVENT_IDS);
        versions = context.getStateStore(Workloads.STORE_ORDER_VERSIONS);
        amounts = context.getStateStore(Workloads.STORE_ORDER_AMOUNTS);
        totals = context.getStateStore(Workloads.STORE_CUSTOMER_TOTALS);
        try {
            sha256 = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void process(Record<String, byte[]> r) {
        Workloads.processed();
        byte[] value = r.value();
        OrderEvent e = OrderEvent.parse(value);
        if (e == null) {
            reject(r, "undecodable");
            return;
        }
        Header idHeader = r.headers().lastHeader(Workloads.EVENT_ID_HEADER);
        if (idHeader == null || idHeader.value() == null || idHeader.value().length == 0) {
            reject(r, "processing-error");
            return;
        }

        // (1) dedup on the event id, by payload hash.
        Bytes eventId = Bytes.wrap(idHeader.value());
        byte[] hash = sha256.digest(value == null ? new byte[0] : value);
        byte[] first = eventIds.get(eventId);
        if (first != null) {
            reject(r, Arrays.equals(first, hash) ? "duplicate" : "conflict");
            return;
        }
        eventIds.put(eventId, hash);

        // (2) version gate per order (versions are unsigned 64-bit, as in onceflow).
        Long last = versions.get(e.orderId);
        if (last != null && Long.compareUnsigned(e.version, last) <= 0) {
            reject(r, "stale");
            return;
        }
        versions.put(e.orderId, e.version);

        // (3) the order's latest amount and the customer's total.
        Long prev = amounts.get(e.orderId);
        amounts.put(e.orderId, e.amount);
        Long total = totals.get(e.customer);
        long next = (total == null ? 0 : total) + e.amount - (prev == null ? 0 : prev);
        totals.put(e.customer, next);

        Headers h = Workloads.withSource(ctx, r.headers());
        ctx.forward(new Record<>(e.customer, (Object) next, r.timestamp(), h), Workloads.SINK_OUTPUT);
    }

    private void reject(Record<String, byte[]> r, String reason) {
        Headers h = Workloads.withSource(ctx, r.headers());
        h.add(Workloads.REJECT_REASON_HEADER, reason.getBytes(StandardCharsets.UTF_8));
        ctx.forward(new Record<>(r.key(), (Object) r.value(), r.timestamp(), h), Workloads.SINK_REJECTED);
    }
}
