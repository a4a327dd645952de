package acl

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/vfs"
)

// File is the ACL file in the data directory, rewritten atomically (temp
// file, fsync, rename, directory fsync) before a CreateAcls or DeleteAcls
// is answered, so an acknowledged change survives a crash. Text, one
// binding a line; names are base64url (no padding) so any byte is safe:
//
//	minibroker-acls v1
//	<resource type> <pattern type> <b64 name> <b64 principal> <b64 host> <operation> <permission>
//
// The numbers are Kafka's wire values (TOPIC 2, GROUP 3, CLUSTER 4,
// TRANSACTIONAL_ID 5; LITERAL 3, PREFIXED 4; READ 3 … IDEMPOTENT_WRITE 12;
// DENY 2, ALLOW 3).
const File = "acls"

const fileHeader = "minibroker-acls v1"

type store struct {
	fs  vfs.FS
	dir string
}

var b64 = base64.RawURLEncoding

func (s *store) save(bs []Binding) error {
	var buf bytes.Buffer
	buf.WriteString(fileHeader + "\n")
	for _, b := range bs {
		fmt.Fprintf(&buf, "%d %d %s %s %s %d %d\n", b.ResourceType, b.PatternType, b64.EncodeToString([]byte(b.ResourceName)),
			b64.EncodeToString([]byte(b.Principal)), b64.EncodeToString([]byte(b.Host)), b.Operation, b.Permission)
	}
	if err := vfs.WriteFileAtomic(s.fs, s.dir, filepath.Join(s.dir, File), buf.Bytes()); err != nil {
		return fmt.Errorf("acl: save: %w", err)
	}
	return nil
}

func (s *store) load() ([]Binding, error) {
	raw, err := vfs.ReadFile(s.fs, filepath.Join(s.dir, File))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("acl: load: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	if !sc.Scan() || sc.Text() != fileHeader {
		return nil, fmt.Errorf("acl: %s: not a %q file", File, fileHeader)
	}
	var out []Binding
	for line := 2; sc.Scan(); line++ {
		b, err := parseLine(strings.Fields(sc.Text()))
		if err != nil {
			return nil, fmt.Errorf("acl: %s line %d: %w", File, line, err)
		}
		out = append(out, b)
	}
	return out, sc.Err()
}

func parseLine(f []string) (Binding, error) {
	if len(f) != 7 {
		return Binding{}, fmt.Errorf("%d fields, want 7", len(f))
	}
	var nums [4]int8
	for i, s := range []string{f[0], f[1], f[5], f[6]} {
		n, err := strconv.ParseInt(s, 10, 8)
		if err != nil {
			return Binding{}, err
		}
		nums[i] = int8(n)
	}
	var strs [3]string
	for i, s := range f[2:5] {
		v, err := b64.DecodeString(s)
		if err != nil {
			return Binding{}, err
		}
		strs[i] = string(v)
	}
	b := Binding{ResourceType: kmsg.ACLResourceType(nums[0]), PatternType: kmsg.ACLResourcePatternType(nums[1]),
		ResourceName: strs[0], Principal: strs[1], Host: strs[2],
		Operation: kmsg.ACLOperation(nums[2]), Permission: kmsg.ACLPermissionType(nums[3])}
	return b, b.Validate()
}
