package tasksapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"fmt"
	"strings"
)

// Permissions (docs/tasks-api.md#keys-and-permissions): call runs tasks and
// sends inputs to and cancels runs; view reads tasks, prompts, models and
// runs; develop (developer keys only) creates, changes and deletes tasks and
// prompts; decode (API keys only, given explicitly) uses the codec server,
// which decrypts any payload of the namespace. A developer key can do
// everything the API serves but decode: reading every conversation in the
// clear is a right of its own.
const (
	PermCall    = "call"
	PermView    = "view"
	PermDevelop = "develop"
	PermDecode  = "decode"
)

// Environment variables of the keys.
const (
	EnvAPIKeys       = "API_KEYS"       // key=perm+perm,key=perm (perms call, view, decode)
	EnvDeveloperKeys = "DEVELOPER_KEYS" // key,key
)

// KeyHash is the SHA-256 of a key: all the API keeps of it.
type KeyHash [sha256.Size]byte

// HashKey is key's KeyHash.
func HashKey(key string) KeyHash { return sha256.Sum256([]byte(key)) }

// Keys maps the hash of each key to its permissions. The keys themselves
// are not kept: a heap dump or a debug print of the API shows no key.
type Keys map[KeyHash]map[string]bool

// find is the permissions of key, and its hash.
//
// No key is compared at all: the caller's key is hashed, and its hash is
// compared with every held hash by crypto/subtle, all of them, with no
// early exit on a match or on a first differing byte. So how long a check
// takes depends on how many keys the API holds, never on how close what
// the caller sent is to a real key (a map lookup would compare hashes
// with an early exit: harmless, as SHA-256 hides how close a key is, but
// this holds without that argument). The API holds a handful of keys.
func (k Keys) find(key string) (KeyHash, map[string]bool, bool) {
	h := HashKey(key)
	var perms map[string]bool
	found := 0
	for held, p := range k {
		if subtle.ConstantTimeCompare(h[:], held[:]) == 1 {
			perms, found = p, 1
		}
	}
	return h, perms, found == 1
}

// ParseKeys reads API_KEYS and DEVELOPER_KEYS.
func ParseKeys(apiKeys, developerKeys string) (Keys, error) {
	k := Keys{}
	for _, item := range splitList(apiKeys) {
		key, perms, ok := strings.Cut(item, "=")
		if !ok || key == "" || perms == "" {
			return nil, fmt.Errorf("%s: %q must be key=perm+perm (perms call, view, decode)", EnvAPIKeys, redactKey(item))
		}
		h := HashKey(key)
		if _, dup := k[h]; dup {
			return nil, fmt.Errorf("%s: a key is listed twice", EnvAPIKeys)
		}
		k[h] = map[string]bool{}
		for _, p := range strings.Split(perms, "+") {
			if p != PermCall && p != PermView && p != PermDecode {
				return nil, fmt.Errorf("%s: permission %q of key %s is not call, view or decode", EnvAPIKeys, p, KeyID(key))
			}
			k[h][p] = true
		}
	}
	for _, key := range splitList(developerKeys) {
		h := HashKey(key)
		if _, dup := k[h]; dup {
			return nil, fmt.Errorf("%s: key %s is also an API key", EnvDeveloperKeys, KeyID(key))
		}
		k[h] = map[string]bool{PermCall: true, PermView: true, PermDevelop: true}
	}
	return k, nil
}

func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func redactKey(item string) string {
	if key, perms, ok := strings.Cut(item, "="); ok {
		return KeyID(key) + "=" + perms
	}
	return KeyID(item)
}

// KeyID names a key without revealing it: 26 lowercase base32 characters
// of its SHA-256 (what createdBy and updatedBy show).
func KeyID(key string) string { return HashKey(key).ID() }

// ID is the KeyID of the key h hashes.
func (h KeyHash) ID() string {
	return strings.ToLower(base32.StdEncoding.EncodeToString(h[:]))[:26]
}
