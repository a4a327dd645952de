package config

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ParseProperties reads Java's .properties format, as Kafka's
// --command-config and client.properties files are written (the rules of
// java.util.Properties.load): one key=value, key:value or "key value" per
// logical line; lines starting with # or ! are comments; a line ending
// in an odd number of backslashes continues on the next one (its leading
// white space dropped), which is how a long sasl.jaas.config is usually
// split; \t \n \r \f \uXXXX escapes, any other escaped character stands
// for itself. A later key wins. Errors give the line number, never the
// value (it may be a password).
func ParseProperties(text string) (map[string]string, error) {
	out := map[string]string{}
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		first := i + 1
		line := strings.TrimLeft(lines[i], " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		for trailingBackslashes(line)%2 == 1 && i+1 < len(lines) {
			i++
			line = line[:len(line)-1] + strings.TrimLeft(lines[i], " \t\f")
		}
		if trailingBackslashes(line)%2 == 1 {
			line = line[:len(line)-1] // a continuation at the end of the file
		}
		key, value, err := splitProperty(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", first, err)
		}
		out[key] = value
	}
	return out, nil
}

// ReadPropertiesFile reads a .properties file.
func ReadPropertiesFile(path string) (map[string]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	props, err := ParseProperties(string(raw))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return props, nil
}

func trailingBackslashes(s string) int {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n
}

// splitProperty cuts a logical line at its first unescaped separator
// (=, : or white space, with white space around it) and unescapes both
// sides.
func splitProperty(line string) (string, string, error) {
	end := len(line)
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			end = i
			break
		}
	}
	key, err := unescapeProperty(line[:end])
	if err != nil {
		return "", "", fmt.Errorf("key: %w", err)
	}
	rest := strings.TrimLeft(line[end:], " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	value, err := unescapeProperty(rest)
	if err != nil {
		return "", "", fmt.Errorf("the value of %s: %w", key, err)
	}
	return key, value, nil
}

func unescapeProperty(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf(`malformed \uXXXX escape`)
			}
			r, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf(`malformed \uXXXX escape`)
			}
			b.WriteRune(rune(r))
			i += 4
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}
