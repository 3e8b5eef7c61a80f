// Free TCP ports on this machine, one per replica, chosen when a local job starts and kept for its
// whole life so that TF_CONFIG stays the same across restarts.
//
// A port is only checked, not held: the replica binds its own. The ports are taken from outside
// the kernel's ephemeral range, because the kernel gives ports from that range to every outgoing
// connect() and every bind() to port 0. A chosen ephemeral port would be free when checked and
// could be the local end of another replica's connection a moment later (replicas connect to
// each other while they start), so the replica that owns it would fail to bind. Outside the range,
// only a process that asks for that very port can take it.
#pragma once

#include <vector>

#include "base/status.h"

namespace cohort::exec {

// A range of ports, both ends included.
struct PortRange {
  int first = 0;
  int last = 0;
};

// The kernel's ephemeral range, /proc/sys/net/ipv4/ip_local_port_range; Linux's default
// 32768-60999 when that cannot be read.
PortRange EphemeralPortRange();

// Returns `count` distinct ports, 1024-65535 outside `ephemeral`, in random order, each free on
// every local address (IPv4 and, where there is IPv6, IPv6) a moment ago. Unavailable when fewer
// are free. Only when `ephemeral` leaves no port outside it at all does it fall back to ports
// that the kernel picks (bind to port 0), with the race described above.
StatusOr<std::vector<int>> ReserveFreePorts(int count, PortRange ephemeral);

// The same with the kernel's ephemeral range.
StatusOr<std::vector<int>> ReserveFreePorts(int count);

}  // namespace cohort::exec
