package config

// protocolSettings choose the request versions the broker serves.
var protocolSettings = []Setting{
	// minibroker only: Kafka has no such setting, because each Kafka
	// release serves one set of ranges; the name follows
	// inter.broker.protocol.version's.
	{Name: "client.protocol.version", Kind: KindString, Default: "4.0", OneOf: []string{"4.0", "3.9"},
		Doc: "The Kafka release whose API version ranges the broker serves and advertises in ApiVersions (minibroker only): 4.0, without the versions KIP-896 removed (Produce v0–v2, Fetch v0–v3, ListOffsets v0, …), or 3.9, with them, for clients older than Kafka 2.1 (Burrow 1.2, sarama with an old Version)."},
}

func init() { settings = append(settings, protocolSettings...) }
