package onceflow.bench.kstreams;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;

/** The peer's command-line flags, {@code --name value} or {@code --name=value}. */
final class Flags {
    static final String USAGE = String.join("\n",
            "usage: java -jar onceflow-kstreams-peer.jar --brokers B --app-id A --input T --output T2",
            "           [--workload copy|orders|pageviews] [--guarantee exactly_once_v2|at_least_once]",
            "           [--commit-interval-ms N] [--state-dir D] [--threads N]",
            "",
            "  --brokers             bootstrap servers, host:port[,host:port]",
            "  --app-id              application.id (consumer group, internal topic prefix)",
            "  --input               input topic",
            "  --output              output topic (created like the input when missing)",
            "  --workload            copy (default), orders (also writes <app-id>-rejected) or pageviews",
            "  --guarantee           exactly_once_v2 (default) or at_least_once",
            "  --commit-interval-ms  commit.interval.ms (default: Kafka Streams' own, 100 with EOS, 30000 without)",
            "  --state-dir           state.dir (default: Kafka Streams' own)",
            "  --threads             num.stream.threads (default 1)",
            "  --progress-ms         progress line period on stderr (default 5000)");

    private static final Set<String> KNOWN = Set.of("brokers", "app-id", "input", "output", "workload",
            "guarantee", "commit-interval-ms", "state-dir", "threads", "progress-ms");

    final String brokers;
    final String appId;
    final String input;
    final String output;
    final String workload;
    final String guarantee;
    final Long commitIntervalMs;
    final String stateDir;
    final int threads;
    final long progressMs;

    private Flags(Map<String, String> m) {
        brokers = required(m, "brokers");
        appId = required(m, "app-id");
        input = required(m, "input");
        output = required(m, "output");
        workload = m.getOrDefault("workload", "copy");
        if (!Set.of("copy", "orders", "pageviews").contains(workload)) {
            throw new IllegalArgumentException("--workload must be copy, orders or pageviews, not " + workload);
        }
        guarantee = m.getOrDefault("guarantee", "exactly_once_v2");
        if (!guarantee.equals("exactly_once_v2") && !guarantee.equals("at_least_once")) {
            throw new IllegalArgumentException("--guarantee must be exactly_once_v2 or at_least_once, not " + guarantee);
        }
        commitIntervalMs = m.containsKey("commit-interval-ms") ? positive(m, "commit-interval-ms", true) : null;
        stateDir = m.get("state-dir");
        threads = Math.toIntExact(m.containsKey("threads") ? positive(m, "threads", false) : 1);
        progressMs = m.containsKey("progress-ms") ? positive(m, "progress-ms", false) : 5000;
        if (input.equals(output)) {
            throw new IllegalArgumentException("--input and --output must differ");
        }
    }

    static Flags parse(String[] args) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("-h") || a.equals("--help")) {
                throw new HelpRequested();
            }
            if (!a.startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument " + a);
            }
            String name = a.substring(2);
            String value;
            int eq = name.indexOf('=');
            if (eq >= 0) {
                value = name.substring(eq + 1);
                name = name.substring(0, eq);
            } else {
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException("--" + name + " needs a value");
                }
                value = args[++i];
            }
            if (!KNOWN.contains(name)) {
                throw new IllegalArgumentException("unknown flag --" + name);
            }
            if (m.put(name, value) != null) {
                throw new IllegalArgumentException("--" + name + " given twice");
            }
        }
        return new Flags(m);
    }

    private static String required(Map<String, String> m, String name) {
        String v = m.get(name);
        if (v == null || v.isEmpty()) {
            throw new IllegalArgumentException("--" + name + " is required");
        }
        return v;
    }

    private static long positive(Map<String, String> m, String name, boolean zeroOk) {
        long v;
        try {
            v = Long.parseLong(m.get(name));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--" + name + " must be an integer, not " + m.get(name));
        }
        if (v < 0 || v == 0 && !zeroOk) {
            throw new IllegalArgumentException("--" + name + " must be " + (zeroOk ? "non-negative" : "positive"));
        }
        return v;
    }

    /** Thrown for -h/--help. */
    static final class HelpRequested extends RuntimeException {
        HelpRequested() {
            super(null, null, false, false);
        }
    }
}
