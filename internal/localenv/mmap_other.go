//go:build !linux

package localenv

import bolt "go.etcd.io/bbolt"

// releaseMap does nothing outside Linux: the kernel reclaims the map's
// pages when it needs them.
func releaseMap(db *bolt.DB) error { return nil }
