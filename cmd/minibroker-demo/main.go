// Command minibroker-demo is the client side of docker/demo.sh, the
// docker-compose failover demo: a producer of numbered records that keeps a
// ledger of what was acknowledged, a group consumer that keeps a ledger of
// what it read, the checks the demo ends with (byte-identical logs, no gap,
// no duplicate) and the timeline picture drawn from the brokers' metrics.
// It is in the container image beside minibroker and built on the host by
// `make demo`; it is not a general tool.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{
		Use:           "minibroker-demo",
		Short:         "Clients and checks of the docker-compose failover demo (docker/demo.sh)",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newProduceCmd(), newConsumeCmd(), newOffsetsCmd(), newRoundtripCmd(),
		newCheckLogsCmd(), newReportCmd(), newTimelineCmd(), newWaitCmd(), newMetricCmd())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
