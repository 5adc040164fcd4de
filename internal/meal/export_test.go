package meal

// SetPageLimit caps items per Query page (tests of LastEvaluatedKey paging).
func (s *Store) SetPageLimit(n int32) { s.pageLimit = n }
