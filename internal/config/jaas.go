package config

import (
	"fmt"
	"strings"
	"unicode"
)

// JAASEntry is one login module of a sasl.jaas.config value, as Kafka's
// JaasConfig parses it: `<LoginModuleClass> <flag> key="value" ... ;`.
type JAASEntry struct {
	LoginModule string
	Flag        string // required, requisite, sufficient or optional
	Options     map[string]string
}

// ParseJAAS parses a sasl.jaas.config value. minibroker reads only the
// first login module (Kafka allows exactly one per sasl.jaas.config).
func ParseJAAS(v string) (JAASEntry, error) {
	s := strings.TrimSpace(v)
	var e JAASEntry
	word := func() string {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		i := strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == ';' || r == '=' })
		if i < 0 {
			i = len(s)
		}
		w := s[:i]
		s = s[i:]
		return w
	}
	e.LoginModule = word()
	e.Flag = word()
	switch e.Flag {
	case "required", "requisite", "sufficient", "optional":
	default:
		return JAASEntry{}, fmt.Errorf("jaas config: want `<LoginModule> required key=\"value\" ...;`")
	}
	e.Options = map[string]string{}
	for {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		if strings.HasPrefix(s, ";") {
			if rest := strings.TrimSpace(s[1:]); rest != "" {
				return JAASEntry{}, fmt.Errorf("jaas config: only one login module is allowed")
			}
			return e, nil
		}
		if s == "" {
			return JAASEntry{}, fmt.Errorf("jaas config: missing the closing ';'")
		}
		key := word()
		if key == "" || !strings.HasPrefix(s, "=") {
			return JAASEntry{}, fmt.Errorf("jaas config: option %q: want key=\"value\"", key)
		}
		s = strings.TrimLeftFunc(s[1:], unicode.IsSpace)
		var val string
		if strings.HasPrefix(s, `"`) {
			end := strings.IndexByte(s[1:], '"')
			if end < 0 {
				return JAASEntry{}, fmt.Errorf("jaas config: option %s: unterminated quote", key)
			}
			val, s = s[1:1+end], s[2+end:]
		} else {
			val = word()
		}
		e.Options[key] = val
	}
}

func checkJAASSyntax(v string) error {
	_, err := ParseJAAS(v)
	return err // never echoes the value: it holds passwords
}
