package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/minibroker/minibroker/internal/adminclient"
)

// adminFlags are how the mirror, fault and drill commands reach a
// broker's HTTP admin API: its address (http:// unless it says
// https://), a bearer token file, and for an HTTPS admin listener the CA
// to trust and a client certificate.
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

// client is the admin API client the flags describe.
func (f *adminFlags) client() *adminclient.Client {
	return adminclient.New(adminclient.Options{Addr: f.addr, TokenFile: f.tokenFile, CAFile: f.caFile, CertFile: f.certFile, Agent: "cli"})
}
