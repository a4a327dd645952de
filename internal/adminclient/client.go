// Package adminclient is the one client of a broker's HTTP admin API
// (internal/mirror/admin.go serves the mirrors, internal/fault the
// faults): typed requests and answers, authenticated as the admin API
// requires (docs/ADMIN_API.md). The CLI (cmd/minibroker), the failover
// drill (internal/drill) and the demo (cmd/minibroker-demo) use it.
package adminclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/minibroker/minibroker/internal/security"
)

// Header is the header the admin API wants on every state-changing
// request that carries no bearer token (a page in a browser cannot send
// it cross-origin without a preflight); the broker's AdminHeader.
const Header = "X-Minibroker-Admin"

// DefaultTimeout bounds a request when Options gives no Timeout.
const DefaultTimeout = 5 * time.Minute

// Options say how to reach a broker's admin API.
type Options struct {
	// Addr is HOST:PORT (http), or http://HOST:PORT, https://HOST:PORT.
	Addr string
	// TokenFile is the broker's admin.token.file (or a file of the same
	// form): its first token is sent as a bearer token, read at every
	// request so that a rotated token is used at once.
	TokenFile string
	// CAFile (PEM) verifies an HTTPS admin listener; CertFile is a PEM
	// file with a client certificate and its key, for a listener with
	// ssl.client.auth.
	CAFile, CertFile string
	// Timeout bounds each request (DefaultTimeout when 0); a stop that
	// waits gets its own wait on top.
	Timeout time.Duration
	// Agent is the value of Header: who is asking ("cli", "drill", …).
	Agent string
}

// Client is an admin API client; it is safe for concurrent use.
type Client struct {
	opts Options
	base string

	once    sync.Once
	hc      *http.Client
	hcError error
}

// New makes a client; nothing is read or dialled until the first request.
func New(o Options) *Client {
	base := o.Addr
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		base = "http://" + base
	}
	if o.Agent == "" {
		o.Agent = "adminclient"
	}
	return &Client{opts: o, base: strings.TrimSuffix(base, "/")}
}

// Base is the URL requests go to (http://HOST:PORT or https://…).
func (c *Client) Base() string { return c.base }

// Error is the admin API's answer to a request it refused (HTTP status
// 300 and above): the status, the message of its {"error"} body, and the
// body for answers that say more (a refused start's report, an
// incomplete stop).
type Error struct {
	Status  int
	Message string // the body's "error", or its text when it is not JSON
	Body    []byte
	// Plain: the body was not the admin API's {"error"} (a route the
	// broker does not serve answers text).
	Plain bool
	hint  string
}

func (e *Error) Error() string {
	if e.Plain {
		return fmt.Sprintf("admin API: HTTP %d: %s%s", e.Status, e.Message, e.hint)
	}
	return fmt.Sprintf("%s (HTTP %d)%s", e.Message, e.Status, e.hint)
}

// StatusOf is err's HTTP status when the admin API refused the request,
// else 0.
func StatusOf(err error) int {
	var ae *Error
	if errors.As(err, &ae) {
		return ae.Status
	}
	return 0
}

func (c *Client) httpClient() (*http.Client, error) {
	c.once.Do(func() {
		c.hc = &http.Client{}
		if c.opts.CAFile == "" && c.opts.CertFile == "" {
			return
		}
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		if c.opts.CAFile != "" {
			raw, err := os.ReadFile(c.opts.CAFile)
			if err != nil {
				c.hcError = fmt.Errorf("admin CA file: %w", err)
				return
			}
			tc.RootCAs = x509.NewCertPool()
			if !tc.RootCAs.AppendCertsFromPEM(raw) {
				c.hcError = fmt.Errorf("admin CA file %s: no PEM certificate", c.opts.CAFile)
				return
			}
		}
		if c.opts.CertFile != "" {
			cert, err := tls.LoadX509KeyPair(c.opts.CertFile, c.opts.CertFile)
			if err != nil {
				c.hcError = fmt.Errorf("admin certificate file: %w", err)
				return
			}
			tc.Certificates = []tls.Certificate{cert}
		}
		c.hc.Transport = &http.Transport{TLSClientConfig: tc}
	})
	return c.hc, c.hcError
}

// do sends a request and decodes its JSON answer into out (unless nil);
// extra lengthens the request's timeout (a stop's wait).
func (c *Client) do(ctx context.Context, method, path string, body, out any, extra time.Duration) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	timeout := c.opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout+extra)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(Header, c.opts.Agent)
	if c.opts.TokenFile != "" {
		tok, err := security.ReadToken(c.opts.TokenFile)
		if err != nil {
			return fmt.Errorf("admin token file: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	hc, err := c.httpClient()
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("admin API: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("admin API: %s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		ae := &Error{Status: resp.StatusCode, Body: raw, Message: strings.TrimSpace(string(raw)), Plain: true}
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(raw, &e) == nil && e.Error != "" {
			ae.Message, ae.Plain = e.Error, false
		}
		if resp.StatusCode == http.StatusUnauthorized {
			ae.hint = ": pass --admin-token-file"
		}
		return ae
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("admin API: %s %s: %w", method, path, err)
	}
	return nil
}
