package config

import (
	"fmt"
	"sort"
	"strings"
)

// SettingsMarkdown renders docs/SETTINGS.md from the settings table
// (TestSettingsDoc keeps the file equal to it).
func SettingsMarkdown() string {
	var b strings.Builder
	b.WriteString(`# Kafka's broker settings in minibroker

<!-- Generated from internal/config's settings table by
     MINIBROKER_UPDATE_DOCS=1 go test ./internal/config -run TestSettingsDoc;
     do not edit by hand. -->

minibroker accepts every setting of Kafka 4's broker ConfigDef (the
settings of KafkaConfig and the configs it pulls in: ServerConfigs,
ReplicationConfigs, GroupCoordinatorConfig, TransactionLogConfig,
KRaftConfigs, SocketServerConfigs, QuotaConfig, ServerLogConfigs,
CleanerConfig, …; ZooKeeper's are gone from Kafka 4 and are refused),
checked with Kafka's type and range, so a server.properties or a compose
file written for Kafka starts minibroker unchanged. Those that mean
something on one node are acted on; the others are accepted and ignored:
the broker names the ones set, once, in its start-up log ("Kafka settings
accepted and ignored"), and they are listed below. minibroker's own
settings and the Kafka settings it acts on are in
[configs/minibroker.yaml](../configs/minibroker.yaml) with their defaults.

Where settings come from, later ones winning: the defaults; ` + "`--config`" + `
(minibroker's YAML, or a Kafka server.properties when the file name ends in
` + "`.properties`" + `); the flags; with ` + "`--kafka-env`" + `, the environment
variables of Kafka's container image; each ` + "`--set key=value`" + `. A name no
table knows is refused in the YAML file and in ` + "`--set`" + `, and, as Kafka
does, only warned about (and ignored) in a server.properties file and in
the environment.

## Kafka's container image environment

` + "`minibroker serve --kafka-env`" + ` (the minibroker image's default
command) reads the environment as Kafka's official image (apache/kafka)
does, so a compose file written for that image runs with only the image
name changed:

* every variable named ` + "`KAFKA_*`" + ` is a setting: the rest of its name in
  lower case, a single underscore a dot, a double one an underscore, a
  triple one a dash (` + "`KAFKA_LISTENERS`" + ` → ` + "`listeners`" + `,
  ` + "`KAFKA_ADVERTISED_LISTENERS`" + ` → ` + "`advertised.listeners`" + `,
  ` + "`KAFKA_NODE_ID`" + ` → ` + "`node.id`" + `,
  ` + "`KAFKA_LISTENER_NAME_EXTERNAL_SSL__CLIENT__AUTH`" + ` →
  ` + "`listener.name.external.ssl_client_auth`" + `); except the image's
  JVM and log4j variables (` + "`KAFKA_HEAP_OPTS`" + `, ` + "`KAFKA_OPTS`" + `,
  ` + "`KAFKA_JMX_OPTS`" + `, ` + "`KAFKA_LOG4J_*`" + `, …);
* ` + "`CLUSTER_ID`" + ` is the cluster id (unset: minibroker makes one; the
  image defaults to a fixed id);
* with ` + "`KAFKA_ADVERTISED_LISTENERS`" + ` set and ` + "`KAFKA_LISTENERS`" + ` not,
  the listeners are the advertised ones on 0.0.0.0;
* listeners from the environment replace the ` + "`--listen`" + ` /
  ` + "`--advertised-listener`" + ` shorthand of the image's command.

Not supported: the image's JKS keystore variables
(` + "`KAFKA_SSL_KEYSTORE_FILENAME`" + `, ` + "`…_CREDENTIALS`" + `; minibroker reads PEM,
` + "`ssl.keystore.location`" + `), and its ` + "`/mnt/shared/config`" + ` mount (pass
` + "`--config /mnt/shared/config/server.properties`" + ` instead).

## Kafka settings minibroker acts on beyond its own table

| setting | type | what minibroker does |
|---|---|---|
`)
	var acted []string
	for name := range actedOn {
		acted = append(acted, name)
	}
	sort.Strings(acted)
	for _, name := range acted {
		s, _ := Lookup(name)
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", name, s.Kind, s.Doc)
	}
	b.WriteString(`
The listeners named in ` + "`controller.listener.names`" + ` are KRaft
controller listeners: they may appear in ` + "`listeners`" + ` and
` + "`listener.security.protocol.map`" + `, and minibroker opens no socket for them.

## Accepted and ignored

Each is checked as Kafka checks it (type, range, allowed values) and
otherwise not acted on; DescribeConfigs describes it. "update mode" is
Kafka's (DynamicBrokerConfig).

| setting | type | default | valid values | update mode | why it means nothing here |
|---|---|---|---|---|---|
`)
	var ignored []Setting
	for _, s := range Settings() {
		if s.Ignored {
			ignored = append(ignored, s)
		}
	}
	sort.Slice(ignored, func(i, j int) bool { return ignored[i].Name < ignored[j].Name })
	for _, s := range ignored {
		def := s.Default
		if def == "" {
			def = "null"
		}
		if s.Sensitive() {
			def = "(hidden)"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", s.Name, s.Kind, mdCell(def), mdCell(s.validValues()), s.Dynamic, mdCell(s.Doc))
	}
	return b.String()
}

// validValues describes a setting's rule as Kafka's documentation does.
func (s Setting) validValues() string {
	switch {
	case len(s.OneOf) > 0:
		return strings.Join(s.OneOf, ", ")
	case s.Kind == KindInt || s.Kind == KindLong || s.Kind == KindShort || s.Kind == KindDouble:
		switch {
		case s.Min != noMin && s.Max != 0:
			return fmt.Sprintf("[%d,...,%d]", s.Min, s.Max)
		case s.Min != noMin:
			return fmt.Sprintf("[%d,...]", s.Min)
		}
	}
	return ""
}

func mdCell(v string) string {
	return strings.ReplaceAll(strings.ReplaceAll(v, "|", `\|`), "\n", " ")
}
