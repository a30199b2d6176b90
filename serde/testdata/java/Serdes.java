import java.util.HexFormat;
import java.util.UUID;
import org.apache.kafka.common.serialization.*;

// Serdes serializes and deserializes values with Kafka's own serdes, for
// serde's compatibility test (TestJavaCompat). Each argument is
// "ser:<type>:<value>" (prints the serialized bytes as hex) or
// "de:<type>:<hex>" (prints the deserialized value, or "error: ..."). Types:
// int, long, short, double, float, uuid, string. A double or float value is
// given by its raw bits in hex (so NaN payloads survive the trip).
public class Serdes {
    public static void main(String[] args) {
        HexFormat hex = HexFormat.of();
        for (String arg : args) {
            String[] p = arg.split(":", 3);
            try {
                if (p[0].equals("ser")) {
                    System.out.println(hex.formatHex(ser(p[1], p[2])));
                } else {
                    System.out.println(de(p[1], hex.parseHex(p[2])));
                }
            } catch (Exception e) {
                System.out.println("error: " + e.getClass().getSimpleName());
            }
        }
    }

    static byte[] ser(String type, String v) {
        switch (type) {
            case "int": return new IntegerSerializer().serialize("t", Integer.parseInt(v));
            case "long": return new LongSerializer().serialize("t", Long.parseLong(v));
            case "short": return new ShortSerializer().serialize("t", Short.parseShort(v));
            case "double": return new DoubleSerializer().serialize("t", Double.longBitsToDouble(Long.parseUnsignedLong(v, 16)));
            case "float": return new FloatSerializer().serialize("t", Float.intBitsToFloat(Integer.parseUnsignedInt(v, 16)));
            case "uuid": return new UUIDSerializer().serialize("t", UUID.fromString(v));
            case "string": return new StringSerializer().serialize("t", v);
        }
        throw new IllegalArgumentException(type);
    }

    static String de(String type, byte[] b) {
        switch (type) {
            case "int": return new IntegerDeserializer().deserialize("t", b).toString();
            case "long": return new LongDeserializer().deserialize("t", b).toString();
            case "short": return new ShortDeserializer().deserialize("t", b).toString();
            case "double": return Long.toHexString(Double.doubleToRawLongBits(new DoubleDeserializer().deserialize("t", b)));
            case "float": return Integer.toHexString(Float.floatToRawIntBits(new FloatDeserializer().deserialize("t", b)));
            case "uuid": return new UUIDDeserializer().deserialize("t", b).toString();
            case "string": return new StringDeserializer().deserialize("t", b);
        }
        throw new IllegalArgumentException(type);
    }
}
