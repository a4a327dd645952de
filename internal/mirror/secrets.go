package mirror

import (
	"encoding/json"
	"fmt"
)

// The source settings document holds every mirror's source security
// settings, secrets included, apart from the state document so that the
// state log (written on every transition, read when debugging) never
// holds a password. It is JSON, saved as the only record of
// mirror-sources.log (statelog.go), mode 0600 (only the broker's user
// reads it), which every save rewrites whole (temp file created 0600,
// fsync, rename, dir fsync) so that no older record keeps a changed or
// deleted secret (before the upgrade, the whole file mirror-sources.json):
//
//	{"version":1,"sources":{"<mirror>":{"security.protocol":"SASL_SSL",
//	  "sasl.mechanism":"SCRAM-SHA-512","sasl.jaas.config":"…"}}}
//
// Create saves it before the state and Delete after, so a mirror in the
// state always has its settings here; an entry without a mirror (a crash
// between the two writes) is dropped at the next write. A mirror without
// an entry (a data dir from before this file) connects in PLAINTEXT, as
// it did.
const sourceConfigsVersion = 1

type sourceConfigsDoc struct {
	Version int                          `json:"version"`
	Sources map[string]map[string]string `json:"sources"`
}

// decodeSourceConfigs parses a source settings document read from file.
// Its errors never quote the document (it holds secrets).
func decodeSourceConfigs(raw []byte, file string) (*sourceConfigsDoc, error) {
	var sd sourceConfigsDoc
	if err := json.Unmarshal(raw, &sd); err != nil {
		// Not %w: a JSON syntax error can quote the text around it.
		return nil, fmt.Errorf("mirror: parse %s: not valid JSON", file)
	}
	if sd.Version != sourceConfigsVersion {
		return nil, fmt.Errorf("mirror: %s version %d, want %d", file, sd.Version, sourceConfigsVersion)
	}
	return &sd, nil
}

// encodeSourceConfigs is the settings of the mirrors in d, as saved.
func encodeSourceConfigs(d *doc) ([]byte, error) {
	sd := sourceConfigsDoc{Version: sourceConfigsVersion, Sources: map[string]map[string]string{}}
	for _, m := range d.Mirrors {
		if len(m.SourceConfig) > 0 {
			sd.Sources[m.Name] = m.SourceConfig
		}
	}
	return json.Marshal(sd)
}
