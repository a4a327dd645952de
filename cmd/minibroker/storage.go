package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/minibroker/minibroker/internal/security"
	"github.com/minibroker/minibroker/internal/vfs"
)

func newStorageCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "storage", Short: "Prepare a data directory offline (as kafka-storage)"}
	var dataDir string
	add := &cobra.Command{
		Use:   "add-scram 'SCRAM-SHA-512=[name=alice,password=alice-secret]' ...",
		Short: "Store SCRAM credentials in a data directory before the broker starts",
		Long: `Store SCRAM credentials (salted and hashed; the password is not kept) in
DATA/scram-credentials, with kafka-storage format --add-scram's syntax:
MECHANISM=[name=USER,password=PASSWORD] or with iterations=N (4096-16384).
Run it while the broker is stopped; a running broker takes credentials
through AlterUserScramCredentials (kafka-configs --alter --add-config, kadm).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dataDir == "" {
				return fmt.Errorf("--data-dir is required")
			}
			if err := vfs.Default.MkdirAll(dataDir, 0o755); err != nil {
				return err
			}
			store, err := security.OpenScramStore(vfs.Default, dataDir)
			if err != nil {
				return err
			}
			for _, arg := range args {
				mech, user, pass, iters, err := parseAddScram(arg)
				if err != nil {
					return err
				}
				if err := store.AddPassword(mech, user, pass, iters); err != nil {
					return fmt.Errorf("%s credential of %s: %w", mech, user, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "stored %s credential for %s\n", mech, user)
			}
			return nil
		},
	}
	add.Flags().StringVar(&dataDir, "data-dir", "", "the broker's data directory")
	cmd.AddCommand(add)
	return cmd
}

// parseAddScram parses MECHANISM=[name=USER,password=PASSWORD,iterations=N]
// (kafka-storage's --add-scram). Errors never echo the password.
func parseAddScram(arg string) (mech, user, pass string, iters int, err error) {
	mech, rest, ok := strings.Cut(arg, "=")
	mech = strings.TrimSpace(mech)
	if !ok || !strings.HasPrefix(rest, "[") || !strings.HasSuffix(rest, "]") {
		return "", "", "", 0, fmt.Errorf("add-scram: want MECHANISM=[name=USER,password=PASSWORD]")
	}
	if mech != security.ScramSHA256 && mech != security.ScramSHA512 {
		return "", "", "", 0, fmt.Errorf("add-scram: mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", mech)
	}
	for _, kv := range strings.Split(rest[1:len(rest)-1], ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return "", "", "", 0, fmt.Errorf("add-scram: want key=value pairs inside [...]")
		}
		v = strings.Trim(strings.TrimSpace(v), `"`)
		switch strings.TrimSpace(k) {
		case "name":
			user = v
		case "password":
			pass = v
		case "iterations":
			if iters, err = strconv.Atoi(v); err != nil {
				return "", "", "", 0, fmt.Errorf("add-scram: iterations %q", v)
			}
		default:
			return "", "", "", 0, fmt.Errorf("add-scram: unknown key %q (name, password, iterations)", k)
		}
	}
	if user == "" || pass == "" {
		return "", "", "", 0, fmt.Errorf("add-scram: name and password are required")
	}
	return mech, user, pass, iters, nil
}
