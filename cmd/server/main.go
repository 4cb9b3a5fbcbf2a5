// Command server runs Tributary: a PostgreSQL-wire streaming database with
// embedded Badger storage.
//
//	go run ./cmd/server [--listen 127.0.0.1:4566] [--data-dir ./tributary-data] [--http-listen 127.0.0.1:5691]
//	                    [--fsync=true] [--accept-damaged-tail]
//
// --http-listen serves the dashboard at /, Prometheus metrics at /metrics and
// Go's profiles at /debug/pprof/ (empty: off).
//
// --fsync=false acknowledges commits before they reach the disk (they survive a
// killed process, not an OS crash or power loss). A data directory with a
// missing or damaged file makes the server exit with status 1 and one line
// naming the file; --accept-damaged-tail starts anyway when the damage is in
// a write-ahead file, dropping the writes from the damage on (README: Damaged
// data).
//
// --auth, --hba-file, --tls-cert, --tls-key and --tls-client-ca set client
// authentication and TLS (README: Security); SIGHUP reloads --hba-file.
//
// --memory-limit (2GB, 512MiB, ...; default 3/4 of the machine's or the
// cgroup's memory) is the one memory budget: the Go
// runtime's soft limit (an explicit GOMEMLIMIT is kept), Badger's memtables
// and caches and the stream operators' caches are sized from it, and
// rw_catalog.rw_memory shows what each consumer holds (README: Memory).
//
// TRIBUTARY_LISTEN and TRIBUTARY_DATA_DIR override the defaults; flags win.
// SIGINT/SIGTERM shut down cleanly (exit status 0).
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tributary/tributary/catalog/persist"
	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/connector/file"
	"github.com/tributary/tributary/executor/stream"
	"github.com/tributary/tributary/server/dashboard"
	"github.com/tributary/tributary/server/metrics"
	"github.com/tributary/tributary/server/pgwire"
	"github.com/tributary/tributary/server/session"
	"github.com/tributary/tributary/storage/badger"
	"github.com/tributary/tributary/storage/memory"
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

// envBool reads a boolean (strconv.ParseBool's forms) from the environment.
func envBool(key string, def bool) bool {
	if v := os.Getenv(key); v != "" {
		if b, err := strconv.ParseBool(v); err == nil {
			return b
		}
	}
	return def
}

func run() error {
	listen := flag.String("listen", envOr("TRIBUTARY_LISTEN", "127.0.0.1:4566"), "address to accept PostgreSQL connections on")
	dataDir := flag.String("data-dir", envOr("TRIBUTARY_DATA_DIR", "./tributary-data"), "directory of the embedded Badger store")
	logLevel := flag.String("log-level", envOr("TRIBUTARY_LOG_LEVEL", "info"), "debug, info, warn or error")
	spillRows := flag.Int("dml-spill-rows", envInt("TRIBUTARY_DML_SPILL_ROWS", 0), "rows a DML statement writes before it stages them into storage (invisible until its epoch commits) instead of holding them in memory (0: default 65536)")
	memLimit := flag.String("memory-limit", envOr("TRIBUTARY_MEMORY_LIMIT", ""), "the server's memory budget, bytes with an optional unit (2GB, 512MiB; units are powers of 1024): the Go runtime's soft limit (unless GOMEMLIMIT is set), Badger's memtables and caches and the stream operators' caches are sized from it (default 3/4 of the machine's or the cgroup's memory)")
	cacheRows := flag.Int("stream-cache-rows", envInt("TRIBUTARY_STREAM_CACHE_ROWS", 0), "rows (groups, join keys) each stateful stream operator keeps in memory; state beyond lives in storage (0: default 65536)")
	pprofAddr := flag.String("pprof", envOr("TRIBUTARY_PPROF", ""), "serve Go's pprof profiles on this address too (off when empty; --http-listen serves them at /debug/pprof/ already)")
	httpAddr := flag.String("http-listen", envOr("TRIBUTARY_HTTP_LISTEN", "127.0.0.1:5691"), "serve the dashboard (/), /metrics (Prometheus) and /debug/pprof/ on this address (off when empty)")
	barrierMS := flag.Int("barrier-interval-ms", envInt("TRIBUTARY_BARRIER_INTERVAL_MS", 1000), "barrier interval (system parameter barrier_interval_ms)")
	maxConns := flag.Int("max-connections", envInt("TRIBUTARY_MAX_CONNECTIONS", 100), "max_connections: client connections past it (counted from accept, before authentication) are refused with 53300")
	fsync := flag.Bool("fsync", envBool("TRIBUTARY_FSYNC", true), "sync every commit to disk before acknowledging it (false: commits survive a killed process but not an OS crash or power loss)")
	fileRoot := flag.String("file-sink-root", envOr("TRIBUTARY_FILE_SINK_ROOT", ""), "directory file sinks write under: relative paths resolve inside it, paths out of it are refused (default <data-dir>/sink-files)")
	auth := flag.String("auth", envOr("TRIBUTARY_AUTH", ""), "client authentication: trust (no passwords), password (SCRAM-SHA-256 for everyone) or empty (trust on loopback connections, password on others)")
	hbaFile := flag.String("hba-file", envOr("TRIBUTARY_HBA_FILE", ""), "pg_hba.conf-style client authentication rules (README: Security); they replace --auth; SIGHUP reloads the file")
	tlsCert := flag.String("tls-cert", envOr("TRIBUTARY_TLS_CERT", ""), "server certificate (PEM) for TLS connections; with --tls-key, SSLRequest is answered 'S'")
	tlsKey := flag.String("tls-key", envOr("TRIBUTARY_TLS_KEY", ""), "private key (PEM) of --tls-cert")
	tlsClientCA := flag.String("tls-client-ca", envOr("TRIBUTARY_TLS_CLIENT_CA", ""), "CA certificates (PEM) that sign client certificates: TLS clients are asked for one and a given one is verified (required by --hba-file's cert method and clientcert option)")
	connectorAllow := flag.String("connector-allow", envOr("TRIBUTARY_CONNECTOR_ALLOW", ""), "comma list of host, host:port or CIDR entries the postgres, kafka and postgres-cdc connectors may connect to (empty: any)")
	secretKeyFile := flag.String("secret-key-file", envOr("TRIBUTARY_SECRET_KEY_FILE", ""), "file holding the key (64 hex digits) that encrypts connector secrets in the catalog; created with a random key, mode 0600, when missing (default <data-dir>/secret.key)")
	streamStats := flag.Bool("stream-stats", envBool("TRIBUTARY_STREAM_STATS", true), "count rows, busy time and cache hits per actor and operator of every streaming job (read by /metrics, the dashboard and EXPLAIN ANALYZE); false saves that work and shows none")
	acceptTail := flag.Bool("accept-damaged-tail", false, "start even when a write-ahead file (.mem, .vlog) of the data dir is damaged, dropping every write from the damaged bytes on (logged; the dropped bytes are kept in FILE.dropped-at-OFFSET); without it the server refuses to start")
	flag.Parse()

	if *fileRoot == "" {
		*fileRoot = filepath.Join(*dataDir, "sink-files")
	}
	file.SetRoot(*fileRoot)
	if err := connector.SetAllowedHosts(*connectorAllow); err != nil {
		return fmt.Errorf("--connector-allow: %w", err)
	}
	mode := session.AuthMode(*auth)
	switch mode {
	case session.AuthAuto, session.AuthTrust, session.AuthPassword:
	default:
		return fmt.Errorf("--auth: %q is not trust, password or empty", *auth)
	}
	var tlsConfig *tls.Config
	if *tlsCert != "" || *tlsKey != "" {
		c, err := pgwire.TLSConfig(*tlsCert, *tlsKey, *tlsClientCA)
		if err != nil {
			return fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		tlsConfig = c
	} else if *tlsClientCA != "" {
		return errors.New("--tls-client-ca needs --tls-cert and --tls-key")
	}
	var rules atomic.Pointer[pgwire.HBA]
	if *hbaFile != "" {
		h, err := pgwire.LoadHBA(*hbaFile)
		if err != nil {
			return fmt.Errorf("--hba-file: %w", err)
		}
		rules.Store(h)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(logger)

	limit, limitFrom, err := memoryLimit(*memLimit)
	if err != nil {
		return fmt.Errorf("--memory-limit: %w", err)
	}
	shares := memory.Split(limit)
	goLimit, goFromEnv := memory.SetGoLimit(shares.Go())
	store, err := badger.Open(badger.Options{Dir: *dataDir, Logger: logger, NoSync: !*fsync, AcceptDamagedTail: *acceptTail,
		MemoryShare: shares.Storage})
	if err != nil {
		return fmt.Errorf("open data dir: %w", err)
	}
	if *secretKeyFile == "" {
		*secretKeyFile = filepath.Join(*dataDir, "secret.key")
	}
	key, err := persist.LoadOrCreateKey(*secretKeyFile)
	if err == nil {
		err = persist.SetSecretKey(key)
	}
	if err != nil {
		_ = store.Close()
		return fmt.Errorf("--secret-key-file: %w", err)
	}
	if !*fsync {
		logger.Warn("--fsync=false: commits are acknowledged before they reach the disk; an OS crash or power loss can lose them")
	}
	defer func() {
		if err := store.Close(); err != nil {
			logger.Error("close store", "err", err)
		}
	}()
	if *pprofAddr != "" && *pprofAddr != *httpAddr {
		go func() {
			if err := http.ListenAndServe(*pprofAddr, pprofMux()); err != nil {
				logger.Warn("pprof server", "err", err)
			}
		}()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	budget, cachePool := memoryBudget(shares, store)
	go budget.Watch(ctx, time.Second, logger)
	sizes := store.Memory().Sizes
	logger.Info("memory budget", "limit", memory.FormatBytes(limit), "from", limitFrom, "go_soft_limit", goLimit, "go_limit_from_env", goFromEnv,
		"memtables", fmt.Sprintf("%d x %d", sizes.NumMemtables, sizes.MemTableSize), "block_cache", sizes.BlockCacheSize,
		"index_cache", sizes.IndexCacheSize, "stream_caches", shares.StreamCaches, "mapped_tables", shares.MappedTables)

	eng, err := session.Open(ctx, store, session.Config{BarrierInterval: time.Duration(*barrierMS) * time.Millisecond, CacheRows: *cacheRows, SpillRows: *spillRows, Logger: logger,
		Memory: budget, CachePool: cachePool,
		RootPassword: os.Getenv("TRIBUTARY_ROOT_PASSWORD"), NoStreamStats: !*streamStats})
	if err != nil {
		return err
	}
	defer eng.Close()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if h := rules.Load(); h != nil && !pgwire.IsLoopback(ln.Addr()) && h.TrustsRemote() > 0 {
		logger.Warn("LISTENING ON A NON-LOOPBACK ADDRESS WITH A TRUST RULE FOR REMOTE ADDRESSES: whoever it matches logs in as any user without a password", "hba_file", *hbaFile, "line", h.TrustsRemote())
	}
	if !pgwire.IsLoopback(ln.Addr()) && mode == session.AuthTrust && *hbaFile == "" {
		logger.Warn("LISTENING ON A NON-LOOPBACK ADDRESS WITHOUT PASSWORDS (--auth trust): anyone who reaches it is a superuser", "listen", ln.Addr().String())
	}
	srv := pgwire.NewServer(pgwire.Config{ServerVersion: "15.0", Logger: logger, MaxConnections: *maxConns, Auth: eng.Authenticate(mode, rules.Load), TLS: tlsConfig}, eng.NewSession)
	if *hbaFile != "" {
		reloadHBA(ctx, logger, *hbaFile, &rules)
	}
	eng.Backends = srv // pg_stat_activity, pg_cancel_backend, pg_terminate_backend
	if *httpAddr != "" {
		httpLn, err := net.Listen("tcp", *httpAddr)
		if err != nil {
			return fmt.Errorf("--http-listen: %w", err)
		}
		mux, dash := httpMux(eng, srv, store, budget)
		go dash.Run(ctx, time.Second)
		httpSrv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		defer httpSrv.Close()
		go func() {
			if err := httpSrv.Serve(httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Warn("http server", "err", err)
			}
		}()
		logger.Info("serving /metrics and the dashboard", "addr", httpLn.Addr().String())
	}
	logger.Info("tributary listening", "addr", ln.Addr().String(), "data_dir", *dataDir, "tls", tlsConfig != nil)

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

// minMemoryLimit is the smallest --memory-limit accepted.
const minMemoryLimit = 16 << 20

// memoryLimit returns the memory budget: flag (a size) when given, else
// memory.DefaultLimit; and where it came from. GOMEMLIMIT is not a default
// for it: it stays the Go runtime's limit alone (SetGoLimit), so a server
// started under one (bench dml-memory) keeps its other sizes.
func memoryLimit(flag string) (int64, string, error) {
	if flag != "" {
		n, err := memory.ParseBytes(flag)
		if err != nil {
			return 0, "", err
		}
		if n < minMemoryLimit {
			return 0, "", fmt.Errorf("%s is below the least budget, %s", flag, memory.FormatBytes(minMemoryLimit))
		}
		return n, "--memory-limit", nil
	}
	n, src := memory.DefaultLimit()
	return max(n, minMemoryLimit), src, nil
}

// memoryBudget lists the budget's consumers for rw_catalog.rw_memory and
// returns it with the stream caches' pool; under pressure the pool and
// Badger's block and index caches shrink, and the pages of Badger's table
// files resident in the process are held to their share.
func memoryBudget(shares memory.Shares, store *badger.Store) (*memory.Budget, *memory.Pool) {
	b := memory.NewBudget(shares.Limit)
	unknown := func() int64 { return -1 }
	b.Add("total", func() int64 { return shares.Limit }, func() int64 { total, _ := memory.GoMemory(); return total })
	b.Add("go_heap_live", unknown, func() int64 { _, live := memory.GoMemory(); return live })
	b.Add("storage_memtables", func() int64 {
		m := store.Memory().Sizes
		return int64(m.NumMemtables) * m.MemTableSize
	}, unknown)
	b.Add("storage_block_cache", func() int64 { return store.Memory().Sizes.BlockCacheSize }, func() int64 { return store.Memory().BlockCacheUsed })
	b.Add("storage_index_cache", func() int64 { return store.Memory().Sizes.IndexCacheSize }, func() int64 { return store.Memory().IndexCacheUsed })
	b.Add("storage_commit_window", func() int64 { n, _ := store.CommitWindow(); return n }, func() int64 { _, n := store.CommitWindow(); return n })
	b.Hold("storage_mapped_tables", shares.MappedTables, func() int64 {
		n, err := store.MappedTables()
		if err != nil {
			return -1
		}
		return n
	}, store.TrimMapped)
	pool := memory.NewPool(shares.StreamCaches)
	b.AddPool("stream_caches", pool)
	b.OnPressure(pool.SetScale)
	b.OnPressure(store.ScaleCaches)
	return b, pool
}

// reloadHBA reloads the rule file on SIGHUP until ctx ends; a file that
// does not parse leaves the rules in force (as PostgreSQL does).
func reloadHBA(ctx context.Context, logger *slog.Logger, path string, rules *atomic.Pointer[pgwire.HBA]) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				h, err := pgwire.LoadHBA(path)
				if err != nil {
					logger.Error("--hba-file not reloaded: the previous rules stay in force", "err", err)
					continue
				}
				rules.Store(h)
				logger.Info("--hba-file reloaded", "path", path)
			}
		}
	}()
}

// pprofMux serves Go's profiles at /debug/pprof/.
func pprofMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// httpMux serves /metrics, read from the engine, the SinkLog and the
// client connections at scrape time, the pprof profiles, and the dashboard
// at / (its sampler is for the caller to Run).
func httpMux(eng *session.Engine, srv *pgwire.Server, store *badger.Store, budget *memory.Budget) (*http.ServeMux, *dashboard.Dashboard) {
	sinks := eng.SinkLog()
	m := metrics.New(metrics.Sources{
		Jobs:    eng.Jobs,
		JobName: eng.JobName,
		Splits:  sinks.SourceSplits,
		Stores:  sinks.Stores,
		CDC:     sinks.CDCProgresses,
		Connections: func() map[string]int {
			out := map[string]int{}
			for st, n := range srv.ConnCounts() {
				out[st.String()] = n
			}
			return out
		},
		CommittedEpoch:   store.CommittedEpoch,
		LateRows:         stream.LateRows,
		BackfillRowsRead: stream.BackfillRowsRead.Load,
		Fragments:        eng.Fragments,
		Storage: func() metrics.StorageStats {
			st := store.Stats()
			out := metrics.StorageStats{LSMBytes: st.LSMBytes, VlogBytes: st.VlogBytes, L0StallTables: st.L0StallTables,
				WriteStalls: st.WriteStalls, WriteStallSeconds: st.WriteStallTime.Seconds(), SlowCompactions: st.SlowCompactions}
			for _, l := range st.Levels {
				out.LevelTables = append(out.LevelTables, l.Tables)
				out.LevelBytes = append(out.LevelBytes, l.Bytes)
			}
			return out
		},
		Memory: func() []metrics.MemoryUsage {
			var out []metrics.MemoryUsage
			for _, u := range budget.Usage() {
				if u.Job == 0 { // the operators' lines are rw_memory's
					out = append(out, metrics.MemoryUsage{Consumer: u.Name, Budget: u.Budget, Used: u.Used})
				}
			}
			return out
		},
	})
	eng.Barriers().Watch(m.ObserveBarrier)
	mux := pprofMux()
	mux.Handle("/metrics", m.Handler())
	dash := dashboard.New(dashboard.Sources{
		Fragments:      eng.Fragments,
		Backfills:      eng.Jobs,
		JobName:        eng.JobName,
		JobKind:        eng.JobKind,
		Splits:         sinks.SourceSplits,
		Stores:         sinks.Stores,
		Events:         sinks.Events,
		CommittedEpoch: store.CommittedEpoch,
	})
	eng.Barriers().Watch(dash.ObserveBarrier)
	mux.Handle("/", dash.Handler())
	return mux, dash
}
