package config

// adminSettings secure the HTTP listener (http-listen): /metrics, /healthz
// and the admin API (mirrors, faults). They are minibroker's own; the
// admin.listener.ssl.* names follow Kafka's ssl.* listener settings.
var adminSettings = []Setting{
	{Name: "admin.token.file", Kind: KindString, Default: "",
		Doc: "File of bearer tokens for the HTTP admin API, one a line: TOKEN (principal User:admin) or PRINCIPAL TOKEN (e.g. User:ops 5f0c…); # starts a comment; at least 32 characters each. Re-read when it changes. Empty: no token authentication."},
	{Name: "admin.listener.ssl.keystore.location", Kind: KindString, Default: "",
		Doc: "PEM file with the HTTP listener's private key and certificate chain: the listener serves HTTPS (re-read when it changes). Empty: plain HTTP."},
	{Name: "admin.listener.ssl.key.password", Kind: KindPassword, Default: "",
		Doc: "Password of an encrypted PKCS#8 key in admin.listener.ssl.keystore.location."},
	{Name: "admin.listener.ssl.truststore.location", Kind: KindString, Default: "",
		Doc: "PEM file of the CA certificates admin clients' certificates are verified against."},
	{Name: "admin.listener.ssl.client.auth", Kind: KindString, Default: "none", OneOf: []string{"none", "requested", "required"},
		Doc: "HTTPS admin listener: none, requested (a client certificate authenticates its subject as User:<DN>) or required (mTLS). requested or required turn authentication on."},
	{Name: "admin.metrics.auth.required", Kind: KindBool, Default: "false",
		Doc: "Require authentication for /metrics and /healthz too (by default they are readable without a token)."},
	{Name: "admin.allow.unauthenticated.remote", Kind: KindBool, Default: "false",
		Doc: "Allow an HTTP listener on a non-loopback address (e.g. 0.0.0.0) without admin authentication. Off: such a broker refuses to start."},
}

func init() { settings = append(settings, adminSettings...) }
