package config

import (
	"fmt"
	"slices"
	"strings"
)

// securitySettings are the listener and security settings, by Kafka's
// names. Those marked Listener may be overridden per listener with
// listener.name.<name>.<setting>; every listener's SASL mechanisms also
// take listener.name.<name>.<mechanism>.sasl.jaas.config.
var securitySettings = []Setting{
	{Name: "listeners", Kind: KindString, Default: "", Check: checkListenerList,
		Doc: "Listeners as NAME://host:port, comma-separated (e.g. PLAINTEXT://127.0.0.1:9092,SECURE://0.0.0.0:9093); empty: the one PLAINTEXT listener of --listen."},
	{Name: "advertised.listeners", Kind: KindString, Default: "", Check: checkListenerList,
		Doc: "Address each listener gives clients that connect through it, as NAME://host:port; a listener not named here advertises its bound address."},
	{Name: "listener.security.protocol.map", Kind: KindString, Default: defaultProtocolMap, Check: checkProtocolMap,
		Doc: "Security protocol of each listener name, as NAME:PROTOCOL (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)."},
	{Name: "ssl.keystore.type", Kind: KindString, Default: "PEM", OneOf: []string{"PEM"}, Listener: true,
		Doc: "Only PEM (KIP-651); Kafka's default is JKS, which minibroker does not read."},
	{Name: "ssl.keystore.location", Kind: KindString, Default: "", Listener: true,
		Doc: "PEM file with the private key and certificate chain (re-read when it changes, without a restart)."},
	{Name: "ssl.keystore.key", Kind: KindPassword, Default: "", Listener: true,
		Doc: "PEM private key inline (PKCS#8, encrypted with ssl.key.password, or unencrypted), instead of ssl.keystore.location."},
	{Name: "ssl.keystore.certificate.chain", Kind: KindString, Default: "", Listener: true,
		Doc: "PEM certificate chain inline, with ssl.keystore.key."},
	{Name: "ssl.key.password", Kind: KindPassword, Default: "", Listener: true,
		Doc: "Password of an encrypted PKCS#8 private key."},
	{Name: "ssl.truststore.type", Kind: KindString, Default: "PEM", OneOf: []string{"PEM"}, Listener: true,
		Doc: "Only PEM (KIP-651)."},
	{Name: "ssl.truststore.location", Kind: KindString, Default: "", Listener: true,
		Doc: "PEM file of the CA certificates client certificates are verified against."},
	{Name: "ssl.truststore.certificates", Kind: KindString, Default: "", Listener: true,
		Doc: "PEM CA certificates inline, instead of ssl.truststore.location."},
	{Name: "ssl.client.auth", Kind: KindString, Default: "none", OneOf: []string{"none", "requested", "required"}, Listener: true,
		Doc: "none, requested (a client certificate is verified when sent) or required (mTLS)."},
	{Name: "ssl.enabled.protocols", Kind: KindList, Default: "TLSv1.2,TLSv1.3", Check: checkTLSVersions, Listener: true,
		Doc: "TLS versions accepted (TLSv1.2, TLSv1.3)."},
	{Name: "ssl.cipher.suites", Kind: KindList, Default: "", Listener: true,
		Doc: "TLS 1.2 cipher suites by IANA name (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, ...); empty: Go's defaults. TLS 1.3 suites are not configurable in Go."},
	{Name: "ssl.principal.mapping.rules", Kind: KindString, Default: "DEFAULT", OneOf: []string{"DEFAULT"}, Listener: true,
		Doc: "Only DEFAULT: an mTLS client's principal is User:<certificate subject distinguished name>."},
	{Name: "sasl.enabled.mechanisms", Kind: KindList, Default: "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", Check: checkMechanisms, Listener: true,
		Doc: "SASL mechanisms offered on SASL listeners (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512); Kafka's default is GSSAPI, which minibroker does not support."},
	{Name: "sasl.server.max.receive.size", Kind: KindInt, Default: "524288", Min: 1, Listener: true,
		Doc: "Largest request before a connection is authenticated; larger closes it."},
	{Name: "connections.max.reauth.ms", Kind: KindLong, Default: "0", Min: 0, Listener: true,
		Doc: "Session lifetime of a SASL connection (KIP-368): past it, a client that has not re-authenticated is disconnected. 0: never."},
}

// SASL mechanisms minibroker serves.
var Mechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

func checkTLSVersions(v string) error {
	if len(splitList(v)) == 0 {
		return fmt.Errorf("at least one of TLSv1.2, TLSv1.3")
	}
	for _, p := range splitList(v) {
		if p != "TLSv1.2" && p != "TLSv1.3" {
			return fmt.Errorf("%q: minibroker accepts TLSv1.2 and TLSv1.3", p)
		}
	}
	return nil
}

func checkMechanisms(v string) error {
	for _, m := range splitList(v) {
		if !slices.Contains(Mechanisms, m) {
			return fmt.Errorf("mechanism %q: minibroker supports %s", m, strings.Join(Mechanisms, ", "))
		}
	}
	return nil
}

// List splits a comma-separated setting value, trimming each entry.
func List(v string) []string { return splitList(v) }
