package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/minibroker/minibroker/internal/broker"
	"github.com/minibroker/minibroker/internal/security"
)

// adminFlags are how the mirror and fault commands reach a broker's HTTP
// admin API: its address (http:// unless it says https://), a bearer
// token file, and for an HTTPS admin listener the CA to trust and a
// client certificate.
type adminFlags struct {
	addr, tokenFile, caFile, certFile string
}

func (f *adminFlags) register(cmd *cobra.Command) {
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.addr, "admin", "127.0.0.1:9644", "the broker's HTTP admin address (HOST:PORT, or https://HOST:PORT for an HTTPS admin listener)")
	pf.StringVar(&f.tokenFile, "admin-token-file", os.Getenv("MINIBROKER_ADMIN_TOKEN_FILE"),
		"file with the admin API's bearer token (the broker's admin.token.file; its first token is sent); default $MINIBROKER_ADMIN_TOKEN_FILE")
	pf.StringVar(&f.caFile, "admin-ca-file", "", "PEM CA certificates to verify an HTTPS admin listener with")
	pf.StringVar(&f.certFile, "admin-cert-file", "", "PEM file with a client certificate and its key, for an HTTPS admin listener with ssl.client.auth")
}

func (f *adminFlags) client() *adminClient {
	base := f.addr
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		base = "http://" + base
	}
	return &adminClient{base: strings.TrimSuffix(base, "/"), flags: f}
}

type adminClient struct {
	timeout time.Duration // at least 5 minutes
	base    string
	flags   *adminFlags
}

func (a *adminClient) httpClient() (*http.Client, error) {
	hc := &http.Client{Timeout: max(a.timeout, 5*time.Minute)}
	if a.flags == nil || (a.flags.caFile == "" && a.flags.certFile == "") {
		return hc, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if a.flags.caFile != "" {
		raw, err := os.ReadFile(a.flags.caFile)
		if err != nil {
			return nil, fmt.Errorf("--admin-ca-file: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(raw) {
			return nil, errors.New("--admin-ca-file: no PEM certificate")
		}
	}
	if a.flags.certFile != "" {
		cert, err := tls.LoadX509KeyPair(a.flags.certFile, a.flags.certFile)
		if err != nil {
			return nil, fmt.Errorf("--admin-cert-file: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	hc.Transport = &http.Transport{TLSClientConfig: tc}
	return hc, nil
}

// do sends a request to the admin API and decodes its JSON answer into out.
func (a *adminClient) do(method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(broker.AdminHeader, "cli")
	if a.flags != nil && a.flags.tokenFile != "" {
		tok, err := security.ReadToken(a.flags.tokenFile)
		if err != nil {
			return fmt.Errorf("--admin-token-file: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	hc, err := a.httpClient()
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("admin API: %w", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		ae := &apiError{status: resp.StatusCode, body: raw}
		var e struct{ Error string }
		switch {
		case json.Unmarshal(raw, &e) == nil && e.Error != "":
			if resp.StatusCode == http.StatusUnauthorized {
				ae.msg = fmt.Sprintf("%s (HTTP 401): pass --admin-token-file", e.Error)
			} else {
				ae.msg = fmt.Sprintf("%s (HTTP %d)", e.Error, resp.StatusCode)
			}
		default:
			ae.msg = fmt.Sprintf("admin API: HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(raw)))
		}
		return ae
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("admin API: %w", err)
	}
	return nil
}

// apiError is the admin API's answer to a refused request: the message,
// and the status and body for callers that read more of it.
type apiError struct {
	msg    string
	status int
	body   []byte
}

func (e *apiError) Error() string { return e.msg }
