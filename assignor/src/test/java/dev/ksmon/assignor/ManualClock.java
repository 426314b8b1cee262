package dev.ksmon.assignor;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;

/** A clock the tests move: by hand (set {@link #now}), or on by a step at every read. */
final class ManualClock extends Clock {

    Instant now;
    private final Duration step;

    private ManualClock(Instant start, Duration step) {
        this.now = start;
        this.step = step;
    }

    /** Stands at {@code start} until a test moves it. */
    static ManualClock at(Instant start) {
        return new ManualClock(start, Duration.ZERO);
    }

    /** Moves on by {@code step} each time it is read, so a time budget runs out without waiting. */
    static ManualClock ticking(Duration step) {
        return new ManualClock(Instant.parse("2026-01-01T00:00:00Z"), step);
    }

    @Override
    public Instant instant() {
        now = now.plus(step);
        return now;
    }

    @Override
    public ZoneId getZone() {
        return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
        return this;
    }
}
