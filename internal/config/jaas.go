package config

import (
	"errors"
	"strings"
)

// JAASEntry is the one login module of a sasl.jaas.config value, as
// Kafka's JaasConfig reads it:
//
//	<LoginModuleClass> <ControlFlag> (<option>=<value>)* ;
//
// with values bare words or double-quoted strings (a backslash escapes the
// next character). The broker's listener JAAS (PLAIN users) and the
// mirror's source client share this parser.
type JAASEntry struct {
	LoginModule string
	Flag        string // required, requisite, sufficient or optional
	Options     map[string]string
}

var errJAASSyntax = errors.New(`jaas config: want <LoginModule> required key="value" ... ;`)

// ParseJAAS parses a sasl.jaas.config value: exactly one login module
// (Kafka refuses more, for a client and for a listener's mechanism).
// Errors never quote the text: it holds passwords.
func ParseJAAS(s string) (JAASEntry, error) {
	toks, err := jaasTokens(s)
	if err != nil {
		return JAASEntry{}, err
	}
	// module flag (name = value)* ;
	if len(toks) < 3 || toks[0].kind != tokWord || toks[1].kind != tokWord {
		return JAASEntry{}, errJAASSyntax
	}
	e := JAASEntry{LoginModule: toks[0].text, Flag: toks[1].text, Options: map[string]string{}}
	switch e.Flag {
	case "required", "requisite", "sufficient", "optional":
	default:
		return JAASEntry{}, errors.New("jaas config: the control flag must be required, requisite, sufficient or optional")
	}
	i := 2
	for i < len(toks) && toks[i].kind != tokSemicolon {
		if i+2 >= len(toks) || toks[i].kind != tokWord || toks[i+1].kind != tokEquals ||
			(toks[i+2].kind != tokWord && toks[i+2].kind != tokQuoted) {
			return JAASEntry{}, errJAASSyntax
		}
		e.Options[toks[i].text] = toks[i+2].text
		i += 3
	}
	if i >= len(toks) {
		return JAASEntry{}, errors.New("jaas config: the login module must end with ';'")
	}
	if i != len(toks)-1 {
		return JAASEntry{}, errors.New("jaas config: only one login module is allowed")
	}
	return e, nil
}

func checkJAASSyntax(v string) error {
	_, err := ParseJAAS(v)
	return err // never echoes the value: it holds passwords
}

type tokKind int

const (
	tokWord tokKind = iota
	tokQuoted
	tokEquals
	tokSemicolon
)

type jaasToken struct {
	kind tokKind
	text string
}

func jaasTokens(s string) ([]jaasToken, error) {
	var out []jaasToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '=':
			out = append(out, jaasToken{tokEquals, "="})
			i++
		case c == ';':
			out = append(out, jaasToken{tokSemicolon, ";"})
			i++
		case c == '"':
			var b strings.Builder
			i++
			closed := false
			for i < len(s) {
				if s[i] == '\\' && i+1 < len(s) {
					b.WriteByte(s[i+1])
					i += 2
					continue
				}
				if s[i] == '"' {
					closed = true
					i++
					break
				}
				b.WriteByte(s[i])
				i++
			}
			if !closed {
				return nil, errors.New("jaas config: a quoted value is not closed")
			}
			out = append(out, jaasToken{tokQuoted, b.String()})
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\n\r=;\"", rune(s[j])) {
				j++
			}
			out = append(out, jaasToken{tokWord, s[i:j]})
			i = j
		}
	}
	return out, nil
}
