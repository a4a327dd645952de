package config

import (
	"fmt"
	"strings"
)

// Authorizer class names minibroker recognises for
// authorizer.class.name: Kafka's KRaft StandardAuthorizer and the ZooKeeper
// era's AclAuthorizer. Both select minibroker's one authorizer
// (internal/acl), which follows StandardAuthorizer's rules.
const (
	StandardAuthorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
	AclAuthorizer      = "kafka.security.authorizer.AclAuthorizer"
)

// authorizerSettings are the ACL settings, by Kafka's names.
var authorizerSettings = []Setting{
	{Name: "authorizer.class.name", Kind: KindString, Default: "", Check: checkAuthorizerClass,
		Doc: "Empty: no authorization (every principal may do everything). " + StandardAuthorizer + " or " + AclAuthorizer +
			": Kafka's ACLs on every API (StandardAuthorizer's rules for both); any other class is refused at start-up."},
	{Name: "super.users", Kind: KindString, Default: "", Check: checkSuperUsers,
		Doc: "Principals allowed everything, semicolon-separated (User:admin;User:ops)."},
	{Name: "allow.everyone.if.no.acl.found", Kind: KindBool, Default: "false",
		Doc: "With the authorizer on, allow a request on a resource no ACL names (any principal)."},
}

func init() { settings = append(settings, authorizerSettings...) }

func checkAuthorizerClass(v string) error {
	switch v {
	case "", StandardAuthorizer, AclAuthorizer:
		return nil
	}
	return fmt.Errorf("unknown authorizer class (minibroker knows %s and %s)", StandardAuthorizer, AclAuthorizer)
}

// SuperUsers splits super.users.
func SuperUsers(v string) []string {
	var out []string
	for _, u := range strings.Split(v, ";") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

func checkSuperUsers(v string) error {
	for _, u := range SuperUsers(v) {
		if typ, name, ok := strings.Cut(u, ":"); !ok || typ == "" || name == "" {
			return fmt.Errorf("super user %q is not Type:name", u)
		}
	}
	return nil
}
