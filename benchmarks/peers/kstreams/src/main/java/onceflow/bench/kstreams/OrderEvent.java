package onceflow.bench.kstreams;

import java.io.IOException;
import java.math.BigInteger;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;

/**
 * One orders event, decoded with Jackson's streaming parser the way Go's encoding/json decodes
 * onceflow's orders.Event: field names match case-insensitively, unknown fields are skipped, null
 * leaves a field at its zero value, the last of repeated fields wins; a wrong type, a fraction or
 * out-of-range number, or anything but one JSON object (or null) makes the value undecodable.
 */
final class OrderEvent {
    private static final JsonFactory JSON = new JsonFactory();
    private static final BigInteger UINT64_MAX = BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE);

    String eventId = "";
    String orderId = "";
    String customer = "";
    long amount;
    /** An unsigned 64-bit version. */
    long version;

    /** Decodes value, or returns null when it is not a valid event. */
    static OrderEvent parse(byte[] value) {
        if (value == null || value.length == 0) {
            return null;
        }
        OrderEvent e = new OrderEvent();
        try (JsonParser p = JSON.createParser(value)) {
            JsonToken t = p.nextToken();
            if (t == JsonToken.VALUE_NULL) {
                return p.nextToken() == null ? e : null;
            }
            if (t != JsonToken.START_OBJECT) {
                return null;
            }
            while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                t = p.nextToken();
                if (t == JsonToken.VALUE_NULL) {
                    continue;
                }
                if (name.equalsIgnoreCase("event_id")) {
                    e.eventId = string(p, t);
                } else if (name.equalsIgnoreCase("order_id")) {
                    e.orderId = string(p, t);
                } else if (name.equalsIgnoreCase("customer")) {
                    e.customer = string(p, t);
                } else if (name.equalsIgnoreCase("amount")) {
                    if (t != JsonToken.VALUE_NUMBER_INT || !fitsLong(p)) {
                        return null;
                    }
                    e.amount = p.getLongValue();
                } else if (name.equalsIgnoreCase("version")) {
                    if (t != JsonToken.VALUE_NUMBER_INT) {
                        return null;
                    }
                    if (fitsLong(p)) {
                        e.version = p.getLongValue();
                        if (e.version < 0) {
                            return null;
                        }
                    } else {
                        BigInteger v = p.getBigIntegerValue();
                        if (v.signum() < 0 || v.compareTo(UINT64_MAX) > 0) {
                            return null;
                        }
                        e.version = v.longValue();
                    }
                } else {
                    p.skipChildren();
                }
                if (e.eventId == null || e.orderId == null || e.customer == null) {
                    return null;
                }
            }
            if (t != JsonToken.END_OBJECT || p.nextToken() != null) {
                return null;
            }
            return e;
        } catch (IOException | RuntimeException ex) {
            return null;
        }
    }

    private static String string(JsonParser p, JsonToken t) throws IOException {
        return t == JsonToken.VALUE_STRING ? p.getText() : null;
    }

    private static boolean fitsLong(JsonParser p) throws IOException {
        JsonParser.NumberType nt = p.getNumberType();
        return nt == JsonParser.NumberType.INT || nt == JsonParser.NumberType.LONG;
    }
}
