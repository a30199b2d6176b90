package onceflow.bench.kstreams;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;

/**
 * The Kafka Streams peer of {@code onceflow bench}: runs the copy or orders workload until SIGTERM,
 * printing a progress line to stderr every 5 s.
 */
public final class Main {
    private Main() {}

    public static void main(String[] args) throws Exception {
        Flags f;
        try {
            f = Flags.parse(args);
        } catch (Flags.HelpRequested h) {
            System.out.println(Flags.USAGE);
            return;
        } catch (IllegalArgumentException e) {
            System.err.println("kstreams-peer: " + e.getMessage());
            System.err.println(Flags.USAGE);
            System.exit(2);
            return;
        }
        int rc = run(f);
        if (rc >= 0) {
            System.exit(rc);
        }
        // rc < 0: terminated by a signal; the JVM exits when the shutdown hook returns.
    }

    /** The Streams configuration: the flags, replication factor 1, earliest; defaults otherwise. */
    static Properties config(Flags f) {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, f.appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, f.brokers);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, f.guarantee);
        if (f.commitIntervalMs != null) {
            p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, f.commitIntervalMs);
        }
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, f.threads);
        if (f.stateDir != null) {
            p.put(StreamsConfig.STATE_DIR_CONFIG, f.stateDir);
        }
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        if (f.workload.equals("pageviews")) {
            // Emit-on-window-close checks for closed windows at most once a second of wall clock
            // (an internal config, default 1000 ms): the windows the input's last records close
            // would otherwise wait for a record that never comes. onceflow checks on every record.
            p.put(Pageviews.EMIT_INTERVAL_CONFIG, 0L);
        }
        return p;
    }

    /** Runs until SIGTERM (returns -1) or until Kafka Streams stops on its own (0, or 1 on failure). */
    static int run(Flags f) throws Exception {
        String rejected = Workloads.rejectedTopic(f.appId);
        List<String> sinks = new ArrayList<>(List.of(f.output));
        if (f.workload.equals("orders")) {
            sinks.add(rejected);
        }
        try {
            ensureTopics(f, sinks);
        } catch (ExecutionException e) {
            log("topics: " + e.getCause());
            return 1;
        }

        Topology topology = switch (f.workload) {
            case "orders" -> Workloads.orders(f.input, f.output, rejected);
            case "pageviews" -> Pageviews.topology(f.input, f.output);
            default -> Workloads.copy(f.input, f.output);
        };
        Properties props = config(f);
        log("workload " + f.workload + ", " + f.input + " -> " + String.join(", ", sinks) + "; config " + props);

        KafkaStreams streams = new KafkaStreams(topology, props);
        CountDownLatch stopped = new CountDownLatch(1);
        AtomicBoolean terminating = new AtomicBoolean();
        AtomicBoolean failed = new AtomicBoolean();
        streams.setUncaughtExceptionHandler(e -> {
            log("stream thread failed: " + e);
            e.printStackTrace();
            failed.set(true);
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.setStateListener((now, before) -> {
            log("state " + before + " -> " + now);
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) {
                if (now == KafkaStreams.State.ERROR) {
                    failed.set(true);
                }
                stopped.countDown();
            }
        });

        Instant began = Instant.now();
        ScheduledExecutorService ticker = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "kstreams-peer-progress");
            t.setDaemon(true);
            return t;
        });
        long[] lastCount = {0};
        ticker.scheduleAtFixedRate(() -> {
            long n = Workloads.PROCESSED.sum();
            long d = n - lastCount[0];
            lastCount[0] = n;
            log(String.format("processed %d records (+%d, %.0f records/s over the last %.1f s), state %s",
                    n, d, d * 1000.0 / f.progressMs, f.progressMs / 1000.0, streams.state()));
        }, f.progressMs, f.progressMs, TimeUnit.MILLISECONDS);

        Thread hook = new Thread(() -> {
            terminating.set(true);
            log("terminating: closing Kafka Streams");
            boolean clean = streams.close(Duration.ofSeconds(60));
            ticker.shutdownNow();
            long ms = Duration.between(began, Instant.now()).toMillis();
            log(String.format("closed%s: processed %d records in %.1f s", clean ? "" : " (timed out)",
                    Workloads.PROCESSED.sum(), ms / 1000.0));
            log(summary());
            stopped.countDown();
        }, "kstreams-peer-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);

        streams.start();
        stopped.await();
        if (terminating.get()) {
            // The shutdown hook closes the client; the JVM exits once it returns.
            hook.join();
            return -1;
        }
        log("Kafka Streams stopped on its own (" + streams.state() + ")");
        streams.close(Duration.ofSeconds(30));
        return failed.get() ? 1 : 0;
    }

    /** The rate from the first processed record to the latest one. */
    static String summary() {
        long n = Workloads.PROCESSED.sum();
        long first = Workloads.FIRST_NANOS.get();
        if (n < 2 || first == 0) {
            return "first to latest record: too few records for a rate";
        }
        double secs = (Workloads.lastNanos - first) / 1e9;
        return String.format("first to latest record: %d records in %.3f s, %.0f records/s",
                n, secs, secs > 0 ? (n - 1) / secs : 0.0);
    }

    /** Creates the missing sink topics with the input topic's partition count. */
    static void ensureTopics(Flags f, List<String> sinks) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, f.brokers);
        try (Admin admin = Admin.create(p)) {
            Map<String, TopicDescription> in = admin.describeTopics(List.of(f.input)).allTopicNames().get();
            int partitions = in.get(f.input).partitions().size();
            Set<String> existing = admin.listTopics().names().get();
            for (String t : sinks) {
                if (existing.contains(t)) {
                    continue;
                }
                try {
                    admin.createTopics(List.of(new NewTopic(t, Optional.of(partitions), Optional.empty()))).all().get();
                    log("created topic " + t + " with " + partitions + " partitions");
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof TopicExistsException)) {
                        throw e;
                    }
                }
            }
        }
    }

    static void log(String msg) {
        System.err.println(Instant.now() + " kstreams-peer: " + msg);
    }
}
