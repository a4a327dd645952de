package broker

import (
	"testing"
)

// TestAuthzTableCoversEveryAPI walks every API the broker serves (the
// registry ApiVersions is built from) against authzTable: a handler
// added without saying what it needs fails here, and so does an entry
// for an API no longer served.
func TestAuthzTableCoversEveryAPI(t *testing.T) {
	served := (&Broker{}).apis()
	for key := range served {
		rule, ok := authzTable[key]
		if !ok {
			t.Errorf("API %d is served but has no entry in authzTable", key)
			continue
		}
		if rule.needs == "" {
			t.Errorf("API %d: authzTable entry does not say what it needs", key)
		}
	}
	for key := range authzTable {
		if _, ok := served[key]; !ok {
			t.Errorf("authzTable has API %d, which is not served", key)
		}
	}
}
