package main

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/config"
)

// newHealthcheckCmd is `minibroker healthcheck`: exit 0 when a broker
// answers ApiVersions on its Kafka listener, 1 otherwise. A FROM scratch
// image has no shell, curl or nc, so the image's HEALTHCHECK runs this.
// It asks ApiVersions rather than /healthz because the Kafka listener is
// what clients and mirrors need; /healthz can answer while it cannot.
func newHealthcheckCmd() *cobra.Command {
	var (
		brokerAddr string
		configFile string
		timeout    time.Duration
	)
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 when the broker answers ApiVersions on its Kafka listener",
		Long: `Exit 0 when the broker answers ApiVersions on its Kafka listener, 1 when
it does not within --timeout. The address is --broker, or the first listener of
--config (its first entry of listeners, else listen; a wildcard host is
asked on 127.0.0.1), or 127.0.0.1:9092. It speaks plaintext: give it a
PLAINTEXT listener.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			addr := brokerAddr
			if addr == "" {
				cfg := config.Default()
				if configFile != "" {
					if err := cfg.LoadFile(configFile); err != nil {
						return err
					}
				}
				ls, err := cfg.Listeners()
				if err != nil {
					return err
				}
				addr = dialable(ls[0].Addr) // the first of `listeners`, or --listen
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			n, err := askAPIVersions(ctx, addr)
			if err != nil {
				return fmt.Errorf("healthcheck %s: %w", addr, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "ok: %s answered ApiVersions with %d APIs\n", addr, n)
			return nil
		},
	}
	cmd.Flags().StringVar(&brokerAddr, "broker", "", "HOST:PORT of the Kafka listener to ask")
	cmd.Flags().StringVar(&configFile, "config", "", "ask the listener of this config file")
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Second, "give up after this long")
	return cmd
}

// dialable turns a listen address into one to connect to: a wildcard or
// empty host becomes loopback.
func dialable(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// askAPIVersions sends one ApiVersions to addr itself (not to whatever the
// broker advertises) and returns the number of APIs in a successful answer.
func askAPIVersions(ctx context.Context, addr string) (int, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0),
		kgo.DialTimeout(time.Until(deadlineOr(ctx, 3*time.Second))))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	seeds := cl.SeedBrokers()
	if len(seeds) == 0 {
		return 0, fmt.Errorf("no seed broker")
	}
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName = "minibroker-healthcheck" // v3+ requires a valid name and version
	req.ClientSoftwareVersion = version
	resp, err := seeds[0].Request(ctx, req)
	if err != nil {
		return 0, err
	}
	av := resp.(*kmsg.ApiVersionsResponse)
	if err := kerr.ErrorForCode(av.ErrorCode); err != nil {
		return 0, err
	}
	return len(av.ApiKeys), nil
}

func deadlineOr(ctx context.Context, d time.Duration) time.Time {
	if dl, ok := ctx.Deadline(); ok {
		return dl
	}
	return time.Now().Add(d)
}
