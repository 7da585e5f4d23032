package wotbench.crosscheck;

import java.net.InetSocketAddress;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.eclipse.californium.core.coap.MessageObserverAdapter;
import org.eclipse.californium.core.coap.Request;
import org.eclipse.californium.core.coap.Response;
import org.eclipse.californium.core.config.CoapConfig;
import org.eclipse.californium.core.config.CoapConfig.CongestionControlMode;
import org.eclipse.californium.core.network.CoapEndpoint;
import org.eclipse.californium.elements.config.Configuration;
import org.eclipse.californium.elements.config.UdpConfig;

/**
 * The cross-check's Californium client (gateway-emulator/bench/crosscheck_cc.py):
 * N confirmable GETs to one URI, the i-th handed to the endpoint at start + i * gap,
 * open loop (asynchronously, whatever the earlier ones are doing), through one
 * CoapEndpoint whose congestion control, ACK_TIMEOUT, ACK_RANDOM_FACTOR,
 * MAX_RETRANSMIT and NSTART are set from the command line. Californium's public
 * API only. Prints one CSV row per request when all have ended:
 * idx,status,retransmissions,sent_us,latency_us (sent_us from the first send's
 * schedule origin; latency from the hand-over to the response).
 */
public final class CfClient {
    private static final class Args {
        String uri;
        int n = 40;
        long gapMs = 500;
        CongestionControlMode cc = CongestionControlMode.NULL;
        long ackTimeoutMs = 2000;
        float ackRandomFactor = 1.5f;
        int maxRetransmit = 4;
        int nstart = 1;
    }

    private static final class Outcome {
        final AtomicReference<String> status = new AtomicReference<>("");
        final AtomicInteger retransmissions = new AtomicInteger();
        final AtomicLong sentNs = new AtomicLong();
        final AtomicLong doneNs = new AtomicLong();
    }

    private CfClient() {
    }

    private static Args parse(String[] argv) {
        Args a = new Args();
        for (int i = 0; i + 1 < argv.length; i += 2) {
            String v = argv[i + 1];
            switch (argv[i]) {
            case "--uri": a.uri = v; break;
            case "--n": a.n = Integer.parseInt(v); break;
            case "--gap-ms": a.gapMs = Long.parseLong(v); break;
            case "--cc": a.cc = CongestionControlMode.valueOf(v.toUpperCase(Locale.ROOT).replace('-', '_')); break;
            case "--ack-timeout-ms": a.ackTimeoutMs = Long.parseLong(v); break;
            case "--ack-random-factor": a.ackRandomFactor = Float.parseFloat(v); break;
            case "--max-retransmit": a.maxRetransmit = Integer.parseInt(v); break;
            case "--nstart": a.nstart = Integer.parseInt(v); break;
            default: throw new IllegalArgumentException("unknown option " + argv[i]);
            }
        }
        if (a.uri == null || argv.length % 2 != 0) {
            throw new IllegalArgumentException("usage: --uri URI [--n N] [--gap-ms MS] [--cc null|cocoa|"
                    + "cocoa-strong|basic-rto|linux-rto|peakhopper-rto] [--ack-timeout-ms MS] "
                    + "[--ack-random-factor F] [--max-retransmit N] [--nstart N]");
        }
        return a;
    }

    private static Configuration config(Args a) {
        CoapConfig.register();
        UdpConfig.register();
        Configuration c = Configuration.createStandardWithoutFile();
        c.set(CoapConfig.CONGESTION_CONTROL_ALGORITHM, a.cc);
        c.set(CoapConfig.ACK_TIMEOUT, a.ackTimeoutMs, TimeUnit.MILLISECONDS);
        c.set(CoapConfig.ACK_INIT_RANDOM, a.ackRandomFactor);
        c.set(CoapConfig.ACK_TIMEOUT_SCALE, 2.0f);
        c.set(CoapConfig.MAX_RETRANSMIT, a.maxRetransmit);
        c.set(CoapConfig.NSTART, a.nstart);
        return c;
    }

    private static void send(CoapEndpoint ep, String uri, Outcome o, CountDownLatch done) {
        Request req = Request.newGet();
        req.setURI(uri);
        req.addMessageObserver(new MessageObserverAdapter() {
            @Override
            public void onRetransmission() {
                o.retransmissions.incrementAndGet();
            }

            @Override
            public void onResponse(Response response) {
                end(response.getCode().isSuccess() ? "ok" : "code-" + response.getCode().text);
            }

            @Override
            public void onTimeout() {
                end("timeout");
            }

            @Override
            protected void failed() {
                end("error");
            }

            private void end(String status) {
                if (o.status.compareAndSet("", status)) {
                    o.doneNs.set(System.nanoTime());
                    done.countDown();
                }
            }
        });
        o.sentNs.set(System.nanoTime());
        ep.sendRequest(req);
    }

    public static void main(String[] argv) throws Exception {
        Args a = parse(argv);
        CoapEndpoint ep = new CoapEndpoint.Builder().setConfiguration(config(a))
                .setInetSocketAddress(new InetSocketAddress("127.0.0.1", 0)).build();
        ep.start();
        Outcome[] out = new Outcome[a.n];
        CountDownLatch done = new CountDownLatch(a.n);
        ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
        long start = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(300);
        for (int i = 0; i < a.n; i++) {
            Outcome o = new Outcome();
            out[i] = o;
            long at = start + TimeUnit.MILLISECONDS.toNanos(i * a.gapMs);
            timer.schedule(() -> send(ep, a.uri, o, done), at - System.nanoTime(), TimeUnit.NANOSECONDS);
        }
        // every exchange ends by MAX_TRANSMIT_WAIT-like bounds; this only guards a hang
        boolean all = done.await(a.n * a.gapMs + 300_000, TimeUnit.MILLISECONDS);
        timer.shutdownNow();
        ep.destroy();
        StringBuilder b = new StringBuilder("idx,status,retransmissions,sent_us,latency_us\n");
        for (int i = 0; i < a.n; i++) {
            Outcome o = out[i];
            String st = o.status.get().isEmpty() ? "unfinished" : o.status.get();
            long lat = o.doneNs.get() == 0 ? -1 : (o.doneNs.get() - o.sentNs.get()) / 1000;
            b.append(i).append(',').append(st).append(',').append(o.retransmissions.get()).append(',')
                    .append((o.sentNs.get() - start) / 1000).append(',').append(lat).append('\n');
        }
        System.out.print(b);
        System.out.flush();
        System.exit(all ? 0 : 1);
    }
}
