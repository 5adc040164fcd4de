package share

// SetPageLimit caps items per Scan page (tests of LastEvaluatedKey paging).
func (s *Store) SetPageLimit(n int32) { s.pageLimit = n }
