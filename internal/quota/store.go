package quota

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/minibroker/minibroker/internal/vfs"
)

// File is the client quotas file in the data directory, rewritten
// atomically (temp file, fsync, rename, directory fsync) before an
// AlterClientQuotas is answered, so an acknowledged change survives a
// crash. Text, one quota a line:
//
//	minibroker-client-quotas v1
//	<user> <client-id> <ip> <key> <value>
//
// Each entity component is "-" (absent), "*" (<default>) or "=" followed
// by the name in base64url without padding (any byte is safe); the value
// is a decimal float (Go's strconv 'g' format, exact).
const File = "client-quotas"

const fileHeader = "minibroker-client-quotas v1"

// values is one entity's quotas, key to value.
type values map[string]float64

// Store holds the quotas of every entity. Changes are written to File
// before they are seen.
type Store struct {
	fs    vfs.FS
	dir   string
	knobs knobs

	mu      sync.Mutex // serializes Alter (and its file write)
	current map[Entity]values
	// onChange is called, holding mu, with the new quotas after each
	// change (the Manager's view).
	onChange func(map[Entity]values)
}

// OpenStore reads dir's File (none: no quotas).
func OpenStore(fsys vfs.FS, dir string) (*Store, error) {
	s := &Store{fs: fsys, dir: dir}
	q, err := s.load()
	if err != nil {
		return nil, err
	}
	s.current = q
	return s, nil
}

// Op is one change of an AlterClientQuotas entry: set Key to Value, or
// remove it.
type Op struct {
	Key    string
	Value  float64
	Remove bool
}

// Alteration is one entry of an AlterClientQuotas request.
type Alteration struct {
	Parts []Part
	Ops   []Op
}

// Result is one entry's answer: Message is empty when it succeeded;
// otherwise the code is INVALID_REQUEST unless Storage (the file could
// not be written).
type Result struct {
	Message string
	Storage bool
}

// Alter validates alts as Kafka's controller does and, unless
// validateOnly, applies the valid ones (each entry on its own: an invalid
// entry does not stop the others) and writes the file before returning.
func (s *Store) Alter(alts []Alteration, validateOnly bool) []Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	results := make([]Result, len(alts))
	next := make(map[Entity]values, len(s.current))
	for e, v := range s.current {
		next[e] = maps.Clone(v)
	}
	seen := map[Entity]int{}
	changed := false
	for i, a := range alts {
		e, keys, msg := validEntity(a.Parts)
		if msg == "" {
			if j, dup := seen[e]; dup {
				// Deviation: Kafka answers the duplicate entity once (its
				// results are a map) and keeps the first entry's change;
				// minibroker refuses both entries.
				msg = "Ignoring duplicate entity " + e.String()
				results[j].Message = msg
			}
			seen[e] = i
		}
		if msg == "" {
			msg = validOps(e, keys, a.Ops)
		}
		if msg != "" {
			results[i].Message = msg
			continue
		}
	}
	for i, a := range alts {
		if results[i].Message != "" {
			continue
		}
		e, _, _ := validEntity(a.Parts)
		v := next[e]
		if v == nil {
			v = values{}
		}
		for _, op := range a.Ops {
			old, had := v[op.Key]
			if op.Remove {
				if had {
					delete(v, op.Key)
					changed = true
				}
			} else if !had || old != op.Value {
				v[op.Key] = op.Value
				changed = true
			}
		}
		if len(v) == 0 {
			delete(next, e)
		} else {
			next[e] = v
		}
	}
	if validateOnly || !changed {
		return results
	}
	if err := s.save(next); err != nil {
		for i := range results {
			if results[i].Message == "" {
				results[i] = Result{Message: err.Error(), Storage: true}
			}
		}
		return results
	}
	s.current = next
	if s.onChange != nil {
		s.onChange(next)
	}
	return results
}

// validOps checks an entry's keys and values (validateQuotaKeyValue).
func validOps(e Entity, keys map[string]keyKind, ops []Op) string {
	seen := map[string]bool{}
	for _, op := range ops {
		if seen[op.Key] {
			return "Duplicate quota key " + op.Key + " not updating quota for this entity " + e.String()
		}
		seen[op.Key] = true
		if op.Remove {
			continue
		}
		kind, ok := keys[op.Key]
		if !ok {
			return "Invalid configuration key " + op.Key
		}
		v := op.Value
		if math.IsNaN(v) || v <= 0 {
			return "Quota " + op.Key + " must be greater than 0"
		}
		switch kind {
		case kindInt:
			if v > math.MaxInt32 {
				return "Proposed value for " + op.Key + " is too large for an INT."
			}
		case kindLong:
			if v > math.MaxInt64 {
				return "Proposed value for " + op.Key + " is too large for a LONG."
			}
		}
		if kind != kindDouble && math.Abs(math.Mod(v, 1)) > 1e-6 {
			return op.Key + " cannot be a fractional value."
		}
		if math.IsInf(v, 0) {
			return "Quota " + op.Key + " must be finite"
		}
	}
	return ""
}

// Entry is one entity and its quotas, as DescribeClientQuotas answers.
type Entry struct {
	Entity Entity
	Values map[string]float64
}

// Filter is one component of a DescribeClientQuotas filter.
type Filter struct {
	Type string
	// MatchType: 0 exact (Match is the name), 1 default, 2 any name.
	MatchType int8
	Match     *string
}

// ErrUnsupportedType is a filter on an entity type Kafka does not know
// (UNSUPPORTED_VERSION, as Kafka answers it).
var ErrUnsupportedType = errors.New("quota: unsupported entity type")

// FilterError is a filter Kafka refuses with INVALID_REQUEST.
type FilterError struct{ Message string }

func (e *FilterError) Error() string { return e.Message }

// Describe answers a DescribeClientQuotas filter as Kafka's
// ClientQuotasImage.describe: each component must match, and strict
// excludes entities with other components.
func (s *Store) Describe(filters []Filter, strict bool) ([]Entry, error) {
	exact := map[string]*string{}
	typed := map[string]bool{}
	for _, f := range filters {
		if f.Type == "" {
			return nil, &FilterError{"Invalid empty entity type."}
		}
		if _, ok := exact[f.Type]; ok || typed[f.Type] {
			return nil, &FilterError{"Entity type " + f.Type + " cannot appear more than once in the filter."}
		}
		if f.Type != TypeUser && f.Type != TypeClientID && f.Type != TypeIP {
			return nil, fmt.Errorf("%w: Unsupported entity type %s", ErrUnsupportedType, f.Type)
		}
		switch f.MatchType {
		case 0:
			if f.Match == nil {
				return nil, &FilterError{"Request specified MATCH_TYPE_EXACT, but set match string to null."}
			}
			exact[f.Type] = f.Match
		case 1:
			if f.Match != nil {
				return nil, &FilterError{"Request specified MATCH_TYPE_DEFAULT, but also specified a match string."}
			}
			exact[f.Type] = nil
		case 2:
			if f.Match != nil {
				return nil, &FilterError{"Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."}
			}
			typed[f.Type] = true
		default:
			return nil, &FilterError{fmt.Sprintf("Unknown match type %d", f.MatchType)}
		}
	}
	_, ipExact := exact[TypeIP]
	if ipExact || typed[TypeIP] {
		_, u := exact[TypeUser]
		_, c := exact[TypeClientID]
		if u || c || typed[TypeUser] || typed[TypeClientID] {
			return nil, &FilterError{"Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component."}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Entry
	for e, v := range s.current {
		if matches(e, exact, typed, strict) {
			out = append(out, Entry{Entity: e, Values: maps.Clone(v)})
		}
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Entity.String(), b.Entity.String()) })
	return out, nil
}

func component(e Entity, t string) Name {
	switch t {
	case TypeUser:
		return e.User
	case TypeClientID:
		return e.ClientID
	}
	return e.IP
}

func matches(e Entity, exact map[string]*string, typed map[string]bool, strict bool) bool {
	if strict && len(e.Components()) != len(exact)+len(typed) {
		return false
	}
	for t, m := range exact {
		n := component(e, t)
		switch {
		case !n.Set:
			return false
		case m == nil && !n.Default, m != nil && (n.Default || n.Value != *m):
			return false
		}
	}
	for t := range typed {
		if !component(e, t).Set {
			return false
		}
	}
	return true
}

var b64 = base64.RawURLEncoding

func encodeName(n Name) string {
	switch {
	case !n.Set:
		return "-"
	case n.Default:
		return "*"
	}
	return "=" + b64.EncodeToString([]byte(n.Value))
}

func decodeName(s string) (Name, error) {
	switch {
	case s == "-":
		return Name{}, nil
	case s == "*":
		return DefaultName, nil
	case strings.HasPrefix(s, "="):
		v, err := b64.DecodeString(s[1:])
		if err != nil || len(v) == 0 {
			return Name{}, fmt.Errorf("bad name %q", s)
		}
		return Named(string(v)), nil
	}
	return Name{}, fmt.Errorf("bad name %q", s)
}

func (s *Store) save(q map[Entity]values) error {
	type line struct {
		e   Entity
		key string
		v   float64
	}
	var lines []line
	for e, vs := range q {
		for k, v := range vs {
			lines = append(lines, line{e, k, v})
		}
	}
	slices.SortFunc(lines, func(a, b line) int {
		if c := strings.Compare(a.e.String(), b.e.String()); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	var buf bytes.Buffer
	buf.WriteString(fileHeader + "\n")
	for _, l := range lines {
		fmt.Fprintf(&buf, "%s %s %s %s %s\n", encodeName(l.e.User), encodeName(l.e.ClientID), encodeName(l.e.IP),
			l.key, strconv.FormatFloat(l.v, 'g', -1, 64))
	}
	path := filepath.Join(s.dir, File)
	if s.knobs.saveWithoutSync {
		return saveWithoutSync(s.fs, path, buf.Bytes())
	}
	if err := vfs.WriteFileAtomic(s.fs, s.dir, path, buf.Bytes()); err != nil {
		return fmt.Errorf("quota: save: %w", err)
	}
	return nil
}

// knobs are the package's test seams, never set outside tests.
type knobs struct {
	// saveWithoutSync writes the file in place with no fsync: the seam
	// for the negative control of TestStoreSurvivesCrash.
	saveWithoutSync bool
}

func saveWithoutSync(fsys vfs.FS, path string, data []byte) error {
	f, err := fsys.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (s *Store) load() (map[Entity]values, error) {
	q := map[Entity]values{}
	raw, err := vfs.ReadFile(s.fs, filepath.Join(s.dir, File))
	if errors.Is(err, os.ErrNotExist) {
		return q, nil
	}
	if err != nil {
		return nil, fmt.Errorf("quota: load: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	if !sc.Scan() || sc.Text() != fileHeader {
		return nil, fmt.Errorf("quota: %s: not a %q file", File, fileHeader)
	}
	for n := 2; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) != 5 {
			return nil, fmt.Errorf("quota: %s line %d: %d fields, want 5", File, n, len(f))
		}
		var e Entity
		for i, p := range []*Name{&e.User, &e.ClientID, &e.IP} {
			if *p, err = decodeName(f[i]); err != nil {
				return nil, fmt.Errorf("quota: %s line %d: %w", File, n, err)
			}
		}
		v, err := strconv.ParseFloat(f[4], 64)
		if err != nil {
			return nil, fmt.Errorf("quota: %s line %d: %w", File, n, err)
		}
		_, keys, msg := validEntity(e.Components())
		if msg == "" {
			msg = validOps(e, keys, []Op{{Key: f[3], Value: v}})
		}
		if msg != "" {
			return nil, fmt.Errorf("quota: %s line %d: %s", File, n, msg)
		}
		if q[e] == nil {
			q[e] = values{}
		}
		q[e][f[3]] = v
	}
	return q, sc.Err()
}
