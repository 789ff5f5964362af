package geo

import "net/netip"

// specialPurpose lists the IANA special-purpose ranges that are not covered
// by the netip.Addr predicates used in IsReserved.
var specialPurpose = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // shared address space (CGNAT)
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation (TEST-NET-1)
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation (TEST-NET-2)
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation (TEST-NET-3)
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and broadcast
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use IPv4/IPv6 translation
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
}

// IsReserved reports whether addr is a private, loopback, link-local,
// multicast, unspecified, documentation or otherwise special-purpose
// address: one that says nothing about where a viewer is.
func IsReserved(addr netip.Addr) bool {
	addr = addr.Unmap()
	if !addr.IsValid() {
		return false
	}
	if addr.IsPrivate() || addr.IsLoopback() || addr.IsUnspecified() ||
		addr.IsLinkLocalUnicast() || addr.IsMulticast() ||
		addr.IsInterfaceLocalMulticast() || addr.IsLinkLocalMulticast() {
		return true
	}
	for _, p := range specialPurpose {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}
