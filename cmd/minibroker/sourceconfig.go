package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/minibroker/minibroker/internal/config"
)

// sourceConfigFlags are a mirror's source security settings on the command
// line: --source-config-file (a Java .properties file, as Kafka's tools
// take with --command-config) read first, then each --source-config
// KEY=VALUE. The file is read here, by the CLI; the paths in it
// (ssl.truststore.location, …) are read by the broker.
type sourceConfigFlags struct {
	pairs []string
	file  string
}

func (f *sourceConfigFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&f.pairs, "source-config", nil,
		"source client setting KEY=VALUE by Kafka's name (security.protocol, sasl.mechanism, sasl.jaas.config, sasl.username, sasl.password, ssl.truststore.location|certificates, ssl.keystore.location|key|certificate.chain, ssl.key.password, ssl.endpoint.identification.algorithm); repeatable")
	cmd.Flags().StringVar(&f.file, "source-config-file", "", "Java .properties file of source client settings (read before --source-config)")
}

func (f *sourceConfigFlags) settings() (map[string]string, error) {
	out := map[string]string{}
	if f.file != "" {
		props, err := config.ReadPropertiesFile(f.file)
		if err != nil {
			return nil, fmt.Errorf("--source-config-file: %w", err)
		}
		out = props
	}
	for _, kv := range f.pairs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			// Not quoted: a mistyped argument may be a password.
			return nil, fmt.Errorf("--source-config: want KEY=VALUE, got an argument without a key")
		}
		out[strings.TrimSpace(k)] = v
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// mirrorConfigFlags are a mirror's settings (mirror.topics.include, …) on
// the command line: each --mirror-config KEY=VALUE, repeatable; alter also
// takes --mirror-config-reset KEY (back to the default).
type mirrorConfigFlags struct {
	pairs []string
	reset []string
}

func (f *mirrorConfigFlags) register(cmd *cobra.Command, alter bool) {
	cmd.Flags().StringArrayVar(&f.pairs, "mirror-config", nil,
		"mirror setting KEY=VALUE by KIP-1279's name (mirror.topics.include, mirror.topics.exclude, mirror.groups.include, mirror.topic.properties.exclude, mirror.metadata.refresh.interval.ms, …; docs/MIRRORING.md); repeatable")
	if alter {
		cmd.Flags().StringArrayVar(&f.reset, "mirror-config-reset", nil, "mirror setting to set back to its default; repeatable")
	}
}

func (f *mirrorConfigFlags) given() bool { return len(f.pairs) > 0 || len(f.reset) > 0 }

func (f *mirrorConfigFlags) settings() (map[string]string, error) {
	if len(f.pairs) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range f.pairs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("--mirror-config: want KEY=VALUE, got %q", kv)
		}
		out[strings.TrimSpace(k)] = v
	}
	return out, nil
}
