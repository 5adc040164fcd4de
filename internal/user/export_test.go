package user

// SetPageLimit caps items per page of the paced Scans (tests of paging).
func (s *Store) SetPageLimit(n int32) { s.pageLimit = n }
