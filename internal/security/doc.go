// Package security builds what a Kafka listener needs to secure its
// connections from Kafka's settings: the TLS configuration of PEM
// keystores and truststores (KIP-651), reloaded when the keystore file
// changes; and the SASL mechanisms (PLAIN from JAAS, SCRAM-SHA-256/512
// from durable salted credentials, KIP-554). It knows nothing of the
// wire protocol: internal/protocol runs the handshakes with what it
// returns.
package security
