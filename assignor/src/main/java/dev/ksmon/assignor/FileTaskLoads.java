package dev.ksmon.assignor;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/** Loads from a file holding one loads record value, read anew at every rebalance. */
public final class FileTaskLoads implements TaskLoads {

    private final Path file;

    public FileTaskLoads(Path file) {
        this.file = file;
    }

    @Override
    public Optional<Measurement> latest(String applicationId) {
        if (!Files.isRegularFile(file)) {
            return Optional.empty();
        }
        try {
            return Optional.of(LoadsRecord.parse(Files.readString(file, StandardCharsets.UTF_8)));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read loads file " + file, e);
        } catch (LoadsRecord.MalformedException e) {
            throw new IllegalStateException(file + ": " + e.getMessage(), e);
        }
    }
}
