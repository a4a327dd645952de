package mirror

import (
	"errors"
	"strings"
)

// jaasEntry is the one login module of a client's sasl.jaas.config, as
// Kafka's JaasConfig reads it:
//
//	<LoginModuleClass> <ControlFlag> (<option>=<value>)* ;
//
// with values bare words or double-quoted strings (a backslash escapes the
// next character), and exactly one module (Kafka refuses a client config
// with more). Errors never quote the text: it holds a password.
type jaasEntry struct {
	module  string
	flag    string
	options map[string]string
}

var errJaasSyntax = errors.New(`want <LoginModule> required username="…" password="…";`)

func parseJaasConfig(s string) (jaasEntry, error) {
	toks, err := jaasTokens(s)
	if err != nil {
		return jaasEntry{}, err
	}
	// module flag (name = value)* ;
	if len(toks) < 3 || toks[0].kind != tokWord || toks[1].kind != tokWord {
		return jaasEntry{}, errJaasSyntax
	}
	e := jaasEntry{module: toks[0].text, flag: toks[1].text, options: map[string]string{}}
	switch e.flag {
	case "required", "requisite", "sufficient", "optional":
	default:
		return jaasEntry{}, errors.New("the control flag must be required, requisite, sufficient or optional")
	}
	i := 2
	for i < len(toks) && toks[i].kind != tokSemicolon {
		if i+2 >= len(toks) || toks[i].kind != tokWord || toks[i+1].kind != tokEquals ||
			(toks[i+2].kind != tokWord && toks[i+2].kind != tokQuoted) {
			return jaasEntry{}, errJaasSyntax
		}
		e.options[toks[i].text] = toks[i+2].text
		i += 3
	}
	if i >= len(toks) {
		return jaasEntry{}, errors.New("the login module must end with ';'")
	}
	if i != len(toks)-1 {
		return jaasEntry{}, errors.New("only one login module is allowed (Kafka's clients take exactly one)")
	}
	return e, nil
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
				return nil, errors.New("a quoted value is not closed")
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
