package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// topicOffsets is what `offsets` prints: sums over the topic's partitions.
type topicOffsets struct {
	Start     int64 `json:"start"`
	End       int64 `json:"end"`
	Committed int64 `json:"committed"` // -1: the group has no commit
}

func newOffsetsCmd() *cobra.Command {
	var (
		brokers, topic, group string
		create                int32
	)
	cmd := &cobra.Command{
		Use:   "offsets",
		Short: "Print a topic's start and end offsets and a group's committed offset (JSON); --create makes the topic first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 15*time.Second)
			defer cancel()
			cl, err := kgo.NewClient(kgo.SeedBrokers(brokers))
			if err != nil {
				return err
			}
			defer cl.Close()
			adm := kadm.NewClient(cl)
			if create > 0 {
				resp, err := adm.CreateTopic(ctx, create, -1, nil, topic)
				if err == nil {
					err = resp.Err
				}
				if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
					return fmt.Errorf("create %s: %w", topic, err)
				}
			}
			out := topicOffsets{Committed: -1}
			starts, err := adm.ListStartOffsets(ctx, topic)
			if err == nil {
				err = starts.Error()
			}
			if err != nil {
				return err
			}
			ends, err := adm.ListEndOffsets(ctx, topic)
			if err == nil {
				err = ends.Error()
			}
			if err != nil {
				return err
			}
			starts.Each(func(o kadm.ListedOffset) { out.Start += o.Offset })
			ends.Each(func(o kadm.ListedOffset) { out.End += o.Offset })
			if group != "" {
				fetched, err := adm.FetchOffsets(ctx, group)
				if err != nil {
					return err
				}
				fetched.Each(func(o kadm.OffsetResponse) {
					if o.Topic == topic && o.Err == nil && o.At >= 0 {
						out.Committed = max(out.Committed, 0) + o.At
					}
				})
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(out)
		},
	}
	f := cmd.Flags()
	f.StringVar(&brokers, "brokers", "", "bootstrap HOST:PORT")
	f.StringVar(&topic, "topic", "demo", "topic")
	f.StringVar(&group, "group", "", "consumer group whose committed offset to print")
	f.Int32Var(&create, "create", 0, "create the topic with this many partitions when missing")
	cmd.MarkFlagRequired("brokers")
	return cmd
}
