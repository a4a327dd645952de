package admin

import (
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/minibroker/minibroker/minibrokertest"
)

// tokenCodes sends the four delegation-token requests through cl and
// returns their error codes, keyed by API key.
func tokenCodes(t *testing.T, cl *kgo.Client) map[int16]int16 {
	t.Helper()
	ctx := adminCtx(t)
	out := map[int16]int16{}
	c := kmsg.NewPtrCreateDelegationTokenRequest()
	c.MaxLifetimeMillis = -1
	cr, err := c.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("CreateDelegationToken: %v", err)
	}
	out[38] = cr.ErrorCode
	r := kmsg.NewPtrRenewDelegationTokenRequest()
	r.HMAC, r.RenewTimeMillis = []byte("hmac"), 1000
	rr, err := r.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("RenewDelegationToken: %v", err)
	}
	if rr.ExpiryTimestamp != -1 {
		t.Errorf("renew expiry %d, want -1", rr.ExpiryTimestamp)
	}
	out[39] = rr.ErrorCode
	e := kmsg.NewPtrExpireDelegationTokenRequest()
	e.HMAC, e.ExpiryPeriodMillis = []byte("hmac"), -1
	er, err := e.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ExpireDelegationToken: %v", err)
	}
	out[40] = er.ErrorCode
	d := kmsg.NewPtrDescribeDelegationTokenRequest()
	dr, err := d.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("DescribeDelegationToken: %v", err)
	}
	if len(dr.TokenDetails) != 0 {
		t.Errorf("describe listed %d tokens, want none", len(dr.TokenDetails))
	}
	out[41] = dr.ErrorCode
	return out
}

// The delegation-token APIs answer as Kafka without
// delegation.token.secret.key: DELEGATION_TOKEN_REQUEST_NOT_ALLOWED on a
// PLAINTEXT connection, DELEGATION_TOKEN_AUTH_DISABLED on a SASL one; a
// token for another owner needs CREATE_TOKENS on that User
// (DELEGATION_TOKEN_AUTHORIZATION_FAILED for alice, not for the super
// user); a renewer that is not a User is INVALID_PRINCIPAL_TYPE. Before
// they were served each request closed the connection (kgo: an error).
func TestDelegationTokensWithoutSecretKey(t *testing.T) {
	t.Parallel()
	plain := minibrokertest.Start(t)
	for key, code := range tokenCodes(t, itest.NewClient(t, plain.Addr())) {
		if code != kerr.DelegationTokenRequestNotAllowed.Code {
			t.Errorf("PLAINTEXT %s: %v, want DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", kmsg.NameForKey(key), kerr.ErrorForCode(code))
		}
	}

	c := itest.AclBroker(t, true)
	alice, admin := itest.AclClient(t, c, "alice"), itest.AclClient(t, c, "admin")
	for key, code := range tokenCodes(t, alice) {
		if code != kerr.DelegationTokenAuthDisabled.Code {
			t.Errorf("SASL %s: %v, want DELEGATION_TOKEN_AUTH_DISABLED", kmsg.NameForKey(key), kerr.ErrorForCode(code))
		}
	}
	create := func(cl *kgo.Client, owner string, renewerType string) *kmsg.CreateDelegationTokenResponse {
		t.Helper()
		req := kmsg.NewPtrCreateDelegationTokenRequest()
		req.MaxLifetimeMillis = -1
		if owner != "" {
			req.OwnerPrincipalType, req.OwnerPrincipalName = kmsg.StringPtr("User"), kmsg.StringPtr(owner)
		}
		if renewerType != "" {
			rn := kmsg.NewCreateDelegationTokenRequestRenewer()
			rn.PrincipalType, rn.PrincipalName = renewerType, "x"
			req.Renewers = append(req.Renewers, rn)
		}
		resp, err := req.RequestWith(adminCtx(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if r := create(alice, "", ""); r.PrincipalName != "alice" || r.TokenRequesterPrincipalName != "alice" ||
		r.IssueTimestamp != -1 || r.ExpiryTimestamp != -1 || r.MaxTimestamp != -1 {
		t.Errorf("own token: owner %s:%s requester %s:%s times %d/%d/%d, want alice, alice and -1",
			r.PrincipalType, r.PrincipalName, r.TokenRequesterPrincipalType, r.TokenRequesterPrincipalName,
			r.IssueTimestamp, r.ExpiryTimestamp, r.MaxTimestamp)
	}
	if r := create(alice, "bob", ""); r.ErrorCode != kerr.DelegationTokenAuthorizationFailed.Code || r.PrincipalName != "bob" {
		t.Errorf("alice for bob: %v owner %s, want DELEGATION_TOKEN_AUTHORIZATION_FAILED for bob", kerr.ErrorForCode(r.ErrorCode), r.PrincipalName)
	}
	if r := create(admin, "bob", ""); r.ErrorCode != kerr.DelegationTokenAuthDisabled.Code {
		t.Errorf("super user for bob: %v, want DELEGATION_TOKEN_AUTH_DISABLED", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := create(alice, "", "Group"); r.ErrorCode != kerr.InvalidPrincipalType.Code {
		t.Errorf("Group renewer: %v, want INVALID_PRINCIPAL_TYPE", kerr.ErrorForCode(r.ErrorCode))
	}
}

// franz-go's kversion (kcl, rpk, kadm) guesses the broker's Kafka version
// from ApiVersions; against Kafka 4.0 none of the Kafka 4 APIs served
// here (the delegation-token APIs, UpdateFeatures, UnregisterBroker,
// AddRaftVoter, RemoveRaftVoter) may be missing or short.
func TestKversionGuessKafka4APIs(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t)
	vs, err := itest.KadmClient(t, c.Addr()).ApiVersions(adminCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if v.Err != nil {
			t.Fatal(v.Err)
		}
		have := kversion.FromApiVersionsResponse(v.Raw())
		for _, key := range []int16{38, 39, 40, 41, 57, 64, 80, 81} {
			want, _ := kversion.V4_0_0().LookupMaxKeyVersion(key)
			got, ok := have.LookupMaxKeyVersion(key)
			if !ok || got < want {
				t.Errorf("%s (%d): served %v up to v%d, Kafka 4.0 up to v%d", kmsg.NameForKey(key), key, ok, got, want)
			}
		}
		t.Logf("kversion guess: %s", v.VersionGuess())
	}
}

// updateFeatures sends one UpdateFeatures request at version v.
func updateFeatures(t *testing.T, cl *kgo.Client, v int16, validateOnly bool, ups ...kmsg.UpdateFeaturesRequestFeatureUpdate) *kmsg.UpdateFeaturesResponse {
	t.Helper()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.Version, req.ValidateOnly, req.FeatureUpdates = v, validateOnly, ups
	resp, err := req.RequestWith(adminCtx(t), cl)
	if err != nil {
		t.Fatalf("UpdateFeatures v%d: %v", v, err)
	}
	if resp.Version != v {
		t.Fatalf("UpdateFeatures sent as v%d, want v%d", resp.Version, v)
	}
	return resp
}

func featureUpdate(name string, level int16, typ int8) kmsg.UpdateFeaturesRequestFeatureUpdate {
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = name, level, typ
	return u
}

// UpdateFeatures as Kafka's controller answers: level 0 of a feature not
// served is a no-op, as is transaction.version at its level (NONE; a NONE
// result per feature for v0–v1, none for v2); a level above the supported
// ones, a negative level, an unknown upgrade type or a downgrade asked as
// an UPGRADE fails the whole request with a top-level
// INVALID_UPDATE_VERSION and no results, validate_only or not; ALTER on
// the cluster is needed (CLUSTER_AUTHORIZATION_FAILED for alice, not for
// the super user). Before it was served kgo refused ("broker is too old").
func TestUpdateFeaturesOneNode(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t)
	for v := int16(0); v <= 2; v++ {
		pinned := kversion.Stable()
		pinned.SetMaxKeyVersion(57, v) // kgo sends the highest version both sides allow
		cl := itest.NewClient(t, c.Addr(), kgo.MaxVersions(pinned))
		for _, validate := range []bool{false, true} {
			r := updateFeatures(t, cl, v, validate, featureUpdate("group.version", 0, 1), featureUpdate("transaction.version", 2, 1))
			wantResults := 2
			if v == 2 {
				wantResults = 0
			}
			if r.ErrorCode != 0 || len(r.Results) != wantResults {
				t.Errorf("v%d validate %v level 0: %v, %d results, want NONE and %d", v, validate, kerr.ErrorForCode(r.ErrorCode), len(r.Results), wantResults)
			}
			for _, res := range r.Results {
				if res.ErrorCode != 0 {
					t.Errorf("v%d %s: %v", v, res.Feature, kerr.ErrorForCode(res.ErrorCode))
				}
			}
			for _, bad := range []kmsg.UpdateFeaturesRequestFeatureUpdate{
				featureUpdate("transaction.version", 3, 1),
				featureUpdate("transaction.version", 1, 1),
				featureUpdate("group.version", 1, 1),
				featureUpdate("group.version", -1, 3),
				featureUpdate("group.version", 0, 9),
			} {
				if v == 0 && bad.UpgradeType == 9 {
					continue // v0 has no upgrade type
				}
				r := updateFeatures(t, cl, v, validate, featureUpdate("group.version", 0, 1), bad)
				if r.ErrorCode != kerr.InvalidUpdateVersion.Code || len(r.Results) != 0 || r.ErrorMessage == nil {
					t.Errorf("v%d validate %v %+v: %v, %d results, want INVALID_UPDATE_VERSION and none", v, validate, bad, kerr.ErrorForCode(r.ErrorCode), len(r.Results))
				}
			}
		}
	}

	a := itest.AclBroker(t, true)
	if r := updateFeatures(t, itest.AclClient(t, a, "alice"), 2, false, featureUpdate("group.version", 0, 1)); r.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("alice: %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := updateFeatures(t, itest.AclClient(t, a, "admin"), 2, false, featureUpdate("group.version", 0, 1)); r.ErrorCode != 0 {
		t.Errorf("super user: %v, want NONE", kerr.ErrorForCode(r.ErrorCode))
	}
}

// UnregisterBroker, AddRaftVoter, RemoveRaftVoter as a one-node combined
// KRaft Kafka answers: unregistering another id is
// BROKER_ID_NOT_REGISTERED, this node's own id NONE; adding or removing a
// voter of the static quorum (kraft.version 0) UNSUPPORTED_VERSION, a
// foreign cluster id INCONSISTENT_CLUSTER_ID; ALTER on the cluster is
// needed (CLUSTER_AUTHORIZATION_FAILED for alice, not for the super
// user). Before they were served kgo refused ("broker is too old").
func TestUnregisterBrokerAndRaftVotersOneNode(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t)
	cl := itest.NewClient(t, c.Addr())
	ctx := adminCtx(t)
	node := c.Broker().NodeID()
	unregister := func(cl *kgo.Client, id int32) int16 {
		t.Helper()
		req := kmsg.NewPtrUnregisterBrokerRequest()
		req.BrokerID = id
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("UnregisterBroker: %v", err)
		}
		return resp.ErrorCode
	}
	if code := unregister(cl, node+1); code != kerr.BrokerIDNotRegistered.Code {
		t.Errorf("unregister %d: %v, want BROKER_ID_NOT_REGISTERED", node+1, kerr.ErrorForCode(code))
	}
	if code := unregister(cl, node); code != 0 {
		t.Errorf("unregister this node: %v, want NONE", kerr.ErrorForCode(code))
	}
	voters := func(cl *kgo.Client, clusterID *string) (int16, int16) {
		t.Helper()
		add := kmsg.NewPtrAddRaftVoterRequest()
		add.ClusterID, add.VoterID, add.TimeoutMillis = clusterID, node+1, 1000
		ar, err := add.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("AddRaftVoter: %v", err)
		}
		rm := kmsg.NewPtrRemoveRaftVoterRequest()
		rm.ClusterID, rm.VoterID = clusterID, node
		rr, err := rm.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("RemoveRaftVoter: %v", err)
		}
		return ar.ErrorCode, rr.ErrorCode
	}
	if a, r := voters(cl, nil); a != kerr.UnsupportedVersion.Code || r != kerr.UnsupportedVersion.Code {
		t.Errorf("add/remove voter: %v / %v, want UNSUPPORTED_VERSION", kerr.ErrorForCode(a), kerr.ErrorForCode(r))
	}
	if a, r := voters(cl, kmsg.StringPtr("not-this-cluster")); a != kerr.InconsistentClusterID.Code || r != kerr.InconsistentClusterID.Code {
		t.Errorf("foreign cluster id: %v / %v, want INCONSISTENT_CLUSTER_ID", kerr.ErrorForCode(a), kerr.ErrorForCode(r))
	}

	a := itest.AclBroker(t, true)
	alice, admin := itest.AclClient(t, a, "alice"), itest.AclClient(t, a, "admin")
	if code := unregister(alice, node+1); code != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("alice unregister: %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
	if x, y := voters(alice, nil); x != kerr.ClusterAuthorizationFailed.Code || y != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("alice voters: %v / %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(x), kerr.ErrorForCode(y))
	}
	if code := unregister(admin, node+1); code != kerr.BrokerIDNotRegistered.Code {
		t.Errorf("super user unregister: %v, want BROKER_ID_NOT_REGISTERED", kerr.ErrorForCode(code))
	}
}
