// Command server runs Tributary: a PostgreSQL-wire streaming database with
// embedded Badger storage.
//
//	go run ./cmd/server [--listen 127.0.0.1:4566] [--data-dir ./tributary-data]
//
// TRIBUTARY_LISTEN and TRIBUTARY_DATA_DIR override the defaults; flags win.
// SIGINT/SIGTERM shut down cleanly (exit status 0).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/tributary/tributary/server/pgwire"
	"github.com/tributary/tributary/server/session"
	"github.com/tributary/tributary/storage/badger"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "tributary:", err)
		os.Exit(1)
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func envInt(key string, def int) int {
	if v := os.Getenv(key); v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return def
}

func run() error {
	listen := flag.String("listen", envOr("TRIBUTARY_LISTEN", "127.0.0.1:4566"), "address to accept PostgreSQL connections on")
	dataDir := flag.String("data-dir", envOr("TRIBUTARY_DATA_DIR", "./tributary-data"), "directory of the embedded Badger store")
	logLevel := flag.String("log-level", envOr("TRIBUTARY_LOG_LEVEL", "info"), "debug, info, warn or error")
	cacheRows := flag.Int("stream-cache-rows", envInt("TRIBUTARY_STREAM_CACHE_ROWS", 0), "rows (groups, join keys) each stateful stream operator keeps in memory; state beyond lives in storage (0: default 65536)")
	pprofAddr := flag.String("pprof", envOr("TRIBUTARY_PPROF", ""), "serve Go's pprof profiles on this address (off when empty)")
	barrierMS := flag.Int("barrier-interval-ms", envInt("TRIBUTARY_BARRIER_INTERVAL_MS", 1000), "barrier interval (system parameter barrier_interval_ms)")
	maxConns := flag.Int("max-connections", envInt("TRIBUTARY_MAX_CONNECTIONS", 100), "max_connections: client connections past it (counted from accept, before authentication) are refused with 53300")
	flag.Parse()

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(logger)

	store, err := badger.Open(badger.Options{Dir: *dataDir, Logger: logger})
	if err != nil {
		return fmt.Errorf("open data dir: %w", err)
	}
	defer func() {
		if err := store.Close(); err != nil {
			logger.Error("close store", "err", err)
		}
	}()
	if *pprofAddr != "" {
		go func() {
			if err := http.ListenAndServe(*pprofAddr, nil); err != nil {
				logger.Warn("pprof server", "err", err)
			}
		}()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	eng, err := session.Open(ctx, store, session.Config{BarrierInterval: time.Duration(*barrierMS) * time.Millisecond, CacheRows: *cacheRows, Logger: logger})
	if err != nil {
		return err
	}
	defer eng.Close()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := pgwire.NewServer(pgwire.Config{ServerVersion: "15.0", Logger: logger, MaxConnections: *maxConns}, eng.NewSession)
	logger.Info("tributary listening", "addr", ln.Addr().String(), "data_dir", *dataDir)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		logger.Info("shutting down")
	case err := <-served:
		if err != nil && !errors.Is(err, net.ErrClosed) {
			return fmt.Errorf("serve: %w", err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- srv.Close() }()
	select {
	case err := <-done:
		if err != nil {
			logger.Warn("close server", "err", err)
		}
	case <-time.After(10 * time.Second):
		logger.Warn("connections did not close within 10s")
	}
	if err := store.Sync(); err != nil {
		logger.Warn("sync store", "err", err)
	}
	logger.Info("stopped")
	return nil
}
