package config

import (
	"regexp"
	"strings"
)

// Kafka's official container image (apache/kafka) is configured by
// environment variables, turned into server.properties by its start-up
// wrapper (KafkaDockerWrapper.getServerConfigsFromEnv): every variable
// named KAFKA_* except a few that configure the JVM or log4j becomes a
// setting, its name the rest of the variable's name in lower case with a
// single underscore turned into a dot, a double one into an underscore
// and a triple one into a dash (KAFKA_LISTENERS → listeners,
// KAFKA_LISTENER_NAME_EXTERNAL_SSL__CLIENT__AUTH →
// listener.name.external.ssl_client_auth, KAFKA_FOO___BAR → foo-bar).
// CLUSTER_ID is the cluster id the storage is formatted with. When
// KAFKA_ADVERTISED_LISTENERS is set and KAFKA_LISTENERS is not (and the
// node is not a controller only), listeners are the advertised ones with
// every host replaced by 0.0.0.0 (the image's configure script).
// `minibroker serve --kafka-env` reads them (cmd/minibroker/serve.go).

// kafkaEnvExcluded are the image's variables that are not settings.
var kafkaEnvExcluded = map[string]bool{
	"KAFKA_VERSION": true, "KAFKA_HEAP_OPTS": true, "KAFKA_LOG4J_OPTS": true, "KAFKA_OPTS": true,
	"KAFKA_JMX_OPTS": true, "KAFKA_JVM_PERFORMANCE_OPTS": true, "KAFKA_GC_LOG_OPTS": true,
	"KAFKA_LOG4J_ROOT_LOGLEVEL": true, "KAFKA_LOG4J_LOGGERS": true, "KAFKA_TOOLS_LOG4J_LOGLEVEL": true,
	"KAFKA_JMX_HOSTNAME": true,
}

// KafkaEnvName maps one variable name to its setting's name, as the
// image does ("" for a variable that is not a setting).
func KafkaEnvName(env string) string {
	if !strings.HasPrefix(env, "KAFKA_") || kafkaEnvExcluded[env] {
		return ""
	}
	// The wrapper removes every "KAFKA_" in the name, not only the prefix.
	name := strings.ToLower(strings.ReplaceAll(env, "KAFKA_", ""))
	name = strings.ReplaceAll(name, "_", ".")
	name = strings.ReplaceAll(name, "...", "-")
	name = strings.ReplaceAll(name, "..", "_")
	return name
}

var advertisedHost = regexp.MustCompile(`://[^:]*:`)

// KafkaEnv returns the settings and the cluster id (CLUSTER_ID, "" when
// unset) an environment (os.Environ's form) gives Kafka's image.
func KafkaEnv(environ []string) (settings map[string]string, clusterID string) {
	settings = map[string]string{}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if k == "CLUSTER_ID" {
			clusterID = v
			continue
		}
		if name := KafkaEnvName(k); name != "" {
			settings[name] = v
		}
	}
	adv, hasAdv := settings["advertised.listeners"]
	if _, has := settings["listeners"]; !has && hasAdv && settings["process.roles"] != "controller" {
		settings["listeners"] = advertisedHost.ReplaceAllString(adv, "://0.0.0.0:")
	}
	return settings, clusterID
}
