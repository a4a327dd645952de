package mirror

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/minibroker/minibroker/internal/vfs"
)

// sourceConfigsFile holds every mirror's source security settings, secrets
// included, apart from mirrors.json so that the state file (rewritten on
// every transition, read when debugging) never holds a password. It is
// JSON, mode 0600 (only the broker's user reads it), rewritten atomically
// (temp file created 0600, fsync, rename, dir fsync):
//
//	{"version":1,"sources":{"<mirror>":{"security.protocol":"SASL_SSL",
//	  "sasl.mechanism":"SCRAM-SHA-512","sasl.jaas.config":"…"}}}
//
// Create writes it before mirrors.json and Delete after, so a mirror in
// mirrors.json always has its settings here; an entry without a mirror (a
// crash between the two writes) is dropped at the next write. A mirror
// without an entry (a data dir from before this file) connects in
// PLAINTEXT, as it did.
const (
	sourceConfigsFile    = "mirror-sources.json"
	sourceConfigsVersion = 1
)

type sourceConfigsDoc struct {
	Version int                          `json:"version"`
	Sources map[string]map[string]string `json:"sources"`
}

// loadSourceConfigs attaches each mirror's settings to its spec.
func loadSourceConfigs(fs vfs.FS, dir string, d *doc) error {
	raw, err := vfs.ReadFile(fs, filepath.Join(dir, sourceConfigsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("mirror: read %s: %w", sourceConfigsFile, err)
	}
	var sd sourceConfigsDoc
	if err := json.Unmarshal(raw, &sd); err != nil {
		// Not %w: a JSON syntax error can quote the text around it.
		return fmt.Errorf("mirror: parse %s: not valid JSON", sourceConfigsFile)
	}
	if sd.Version != sourceConfigsVersion {
		return fmt.Errorf("mirror: %s version %d, want %d", sourceConfigsFile, sd.Version, sourceConfigsVersion)
	}
	for _, m := range d.Mirrors {
		m.SourceConfig = sd.Sources[m.Name]
	}
	return nil
}

// saveSourceConfigs writes the settings of the mirrors in d.
func saveSourceConfigs(fs vfs.FS, dir string, d *doc) error {
	sd := sourceConfigsDoc{Version: sourceConfigsVersion, Sources: map[string]map[string]string{}}
	for _, m := range d.Mirrors {
		if len(m.SourceConfig) > 0 {
			sd.Sources[m.Name] = m.SourceConfig
		}
	}
	raw, err := json.MarshalIndent(sd, "", "  ")
	if err != nil {
		return err
	}
	if err := vfs.WriteFileAtomicPrivate(fs, dir, filepath.Join(dir, sourceConfigsFile), raw); err != nil {
		return fmt.Errorf("mirror: save %s: %w", sourceConfigsFile, err)
	}
	return nil
}
