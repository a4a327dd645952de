package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/minibroker/minibroker/internal/broker"
	"github.com/minibroker/minibroker/internal/config"
)

func newServeCmd() *cobra.Command {
	var (
		configFile string
		sets       []string
		kafkaEnv   bool
		flags      = config.Default()
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a broker",
		Long: `Run a broker. Settings come from the embedded defaults, then --config,
then the flags, then (with --kafka-env) the KAFKA_* environment variables
of Kafka's container image, then each --set key=value (Kafka's names, e.g.
--set log.segment.bytes=1048576). --config takes minibroker's YAML file or
a Kafka server.properties (a name ending in .properties). See
configs/minibroker.yaml for minibroker's options and docs/SETTINGS.md for
Kafka's settings.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := config.Default()
			var notes []string // said once the logger exists
			if strings.HasSuffix(configFile, ".properties") {
				unknown, err := cfg.LoadProperties(configFile)
				if err != nil {
					return err
				}
				if len(unknown) > 0 {
					notes = append(notes, fmt.Sprintf("%s: unknown settings ignored (as Kafka ignores them): %s", configFile, strings.Join(unknown, ", ")))
				}
			} else if configFile != "" {
				if err := cfg.LoadFile(configFile); err != nil {
					return err
				}
			}
			fs := cmd.Flags()
			if fs.Changed("data-dir") {
				cfg.DataDir = flags.DataDir
			}
			if fs.Changed("listen") {
				cfg.Listen = flags.Listen
			}
			if fs.Changed("advertised-listener") {
				cfg.AdvertisedListener = flags.AdvertisedListener
			}
			if fs.Changed("http-listen") {
				cfg.HTTPListen = flags.HTTPListen
			}
			if fs.Changed("cluster-id") {
				cfg.ClusterID = flags.ClusterID
			}
			if fs.Changed("node-id") {
				cfg.NodeID = flags.NodeID
			}
			if fs.Changed("log-level") {
				cfg.LogLevel = flags.LogLevel
			}
			if fs.Changed("log-format") {
				cfg.LogFormat = flags.LogFormat
			}
			envListeners := false
			if kafkaEnv {
				settings, clusterID := config.KafkaEnv(os.Environ())
				if clusterID != "" {
					cfg.ClusterID = clusterID
				}
				_, envListeners = settings["listeners"]
				unknown, err := cfg.SetLenient(settings)
				if err != nil {
					return fmt.Errorf("KAFKA_* environment: %w", err)
				}
				if len(unknown) > 0 {
					notes = append(notes, "KAFKA_* environment: unknown settings ignored (as Kafka ignores them): "+strings.Join(unknown, ", "))
				}
			}
			for _, kv := range sets {
				if err := cfg.SetPair(kv); err != nil {
					return err
				}
			}
			// The environment's listeners replace the --listen shorthand
			// (the image's command gives it for a container without them).
			if cfg.String("listeners") != "" && !envListeners && (fs.Changed("listen") || fs.Changed("advertised-listener")) {
				return fmt.Errorf("--listen and --advertised-listener are a shorthand for one PLAINTEXT listener: use them or the listeners setting, not both")
			}
			return serve(cmd.Context(), cfg, notes)
		},
	}
	f := cmd.Flags()
	f.StringVar(&configFile, "config", "", "YAML config file (see configs/minibroker.yaml), or a Kafka server.properties (name ending in .properties)")
	f.BoolVar(&kafkaEnv, "kafka-env", false, "read settings from KAFKA_* environment variables and CLUSTER_ID, as Kafka's container image does (KAFKA_LISTENERS → listeners)")
	f.StringVar(&flags.DataDir, "data-dir", flags.DataDir, "data directory")
	f.StringVar(&flags.Listen, "listen", flags.Listen, "Kafka PLAINTEXT listener HOST:PORT (shorthand for --set listeners=PLAINTEXT://HOST:PORT)")
	f.StringVar(&flags.AdvertisedListener, "advertised-listener", "", "HOST:PORT clients are told to connect to (default: the listener; shorthand for advertised.listeners)")
	f.StringVar(&flags.HTTPListen, "http-listen", flags.HTTPListen, "HTTP listener for /metrics, /healthz and the admin API (empty: off)")
	f.StringVar(&flags.ClusterID, "cluster-id", "", "cluster id for a new data dir; must match a stored one")
	f.Int32Var(&flags.NodeID, "node-id", flags.NodeID, "this broker's node id")
	f.StringVar(&flags.LogLevel, "log-level", flags.LogLevel, "debug, info, warn or error")
	f.StringVar(&flags.LogFormat, "log-format", flags.LogFormat, "json or console")
	f.StringArrayVar(&sets, "set", nil, "Kafka-named setting key=value (repeatable)")
	return cmd
}

func newLogger(level, format string) (*zap.Logger, error) {
	var lvl zapcore.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: %w", level, err)
	}
	var zc zap.Config
	switch format {
	case "json":
		zc = zap.NewProductionConfig()
	case "console":
		zc = zap.NewDevelopmentConfig()
		zc.Development = false
		zc.DisableStacktrace = true
	default:
		return nil, fmt.Errorf("--log-format %q: want json or console", format)
	}
	zc.Level = zap.NewAtomicLevelAt(lvl)
	return zc.Build()
}

func serve(ctx context.Context, cfg config.Config, notes []string) error {
	logger, err := newLogger(cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		return err
	}
	defer logger.Sync()
	for _, n := range notes {
		logger.Warn(n)
	}
	b, err := broker.New(broker.Options{Config: cfg, Logger: logger})
	if err != nil {
		return err
	}
	b.Serve()
	if ctx == nil {
		ctx = context.Background()
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sig)
	select {
	case s := <-sig:
		logger.Info("shutting down", zap.Stringer("signal", s))
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return b.Close(shutdownCtx)
}
