#include "collective/same_host_algorithms.h"

#include <algorithm>
#include <cstring>

#include "collective/reduction.h"
#include "net/connection_set.h"

namespace cohort::collective {
namespace {

// "My buffer is at `address` and holds `bytes` bytes": the first message of every same-host
// operation, 16 bytes on the wire.
struct BufferAnnouncement {
  uint64_t address = 0;
  uint64_t bytes = 0;
};

constexpr size_t kAnnouncementSize = 16;

struct AnnouncementWire {
  uint8_t bytes[kAnnouncementSize];
};

// Little-endian, whatever the host: the same bytes as every other message of the protocol.
void PutU64(uint8_t* out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(value >> (8 * i));
}

uint64_t GetU64(const uint8_t* in) {
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value |= static_cast<uint64_t>(in[i]) << (8 * i);
  return value;
}

AnnouncementWire Encode(const void* buffer, size_t bytes) {
  AnnouncementWire wire;
  PutU64(wire.bytes, reinterpret_cast<uint64_t>(buffer));
  PutU64(wire.bytes + 8, bytes);
  return wire;
}

BufferAnnouncement Decode(const AnnouncementWire& wire) {
  BufferAnnouncement announcement;
  announcement.address = GetU64(wire.bytes);
  announcement.bytes = GetU64(wire.bytes + 8);
  return announcement;
}

// Checks that a peer announced the size this rank expects; a mismatch means the ranks called the
// collective with different arguments.
Status CheckAnnouncedSize(net::PeerExchange& exchange, const OperationContext& context, int peer,
                          const BufferAnnouncement& announcement, size_t expected) {
  if (announcement.bytes == expected) return Status::OK();
  return exchange.Fail(Status::FailedPrecondition(
      context.connections->PeerName(peer) + " announced a buffer of " +
      std::to_string(announcement.bytes) + " bytes where " + std::to_string(expected) +
      " were expected: the tasks called the same collective with different sizes"));
}

std::vector<int> AllPeers(const net::ConnectionSet& connections) {
  std::vector<int> peers;
  for (int rank = 0; rank < connections.size(); ++rank) {
    if (rank != connections.rank()) peers.push_back(rank);
  }
  return peers;
}

// A peer that gave up on the operation (because something failed) may have reused its buffer
// while this rank was still copying from it. It puts a failure notice in this rank's socket
// before it returns (net::PeerExchange), so a last look at the sockets after the copies tells
// whether what was copied can be trusted.
Status ConfirmNoPeerGaveUp(net::PeerExchange& exchange) { return exchange.Service(); }

}  // namespace

SameHostAllReduce::SameHostAllReduce(const OperationContext& context, void* data, size_t count,
                                     DataType type, ReduceOp op, size_t segment_bytes,
                                     std::vector<uint8_t>* scratch)
    : context_(context),
      data_(static_cast<uint8_t*>(data)),
      count_(count),
      type_(type),
      op_(op),
      segment_bytes_(segment_bytes),
      scratch_(scratch) {}

Status SameHostAllReduce::Run() {
  net::ConnectionSet& connections = *context_.connections;
  const int size = connections.size();
  const int rank = connections.rank();
  if (count_ == 0 || size == 1) return Status::OK();
  const size_t element_size = SizeOf(type_);
  const std::vector<int> peers = AllPeers(connections);
  BlockPartition blocks(count_, size);
  const size_t segment_elements = SegmentElements(segment_bytes_, element_size);
  auto segments_of = [&](int block) { return SegmentCount(blocks.size(block), segment_elements); };

  std::unique_ptr<net::PeerExchange> opened =
      connections.OpenExchange(peers, context_.tag, context_.description, context_.deadline);
  net::PeerExchange& exchange = *opened;
  COHORT_RETURN_IF_ERROR(exchange.status());

  // From every peer, in order: its announcement, one "segment ready" per segment of its block,
  // and "I am done reading your buffer".
  std::vector<AnnouncementWire> wires(size);
  for (int peer : peers) {
    exchange.Receive(peer, wires[peer].bytes, kAnnouncementSize);
    for (size_t segment = 0; segment < segments_of(peer); ++segment) {
      exchange.Receive(peer, nullptr, 0);
    }
    exchange.Receive(peer, nullptr, 0);
  }
  const AnnouncementWire mine = Encode(data_, count_ * element_size);
  for (int peer : peers) exchange.Send(peer, mine.bytes, kAnnouncementSize);

  std::vector<BufferAnnouncement> announced(size);
  for (int peer : peers) {
    COHORT_RETURN_IF_ERROR(exchange.WaitForReceives(peer, 1));
    announced[peer] = Decode(wires[peer]);
    COHORT_RETURN_IF_ERROR(
        CheckAnnouncedSize(exchange, context_, peer, announced[peer], count_ * element_size));
  }

  // Copies every segment of a peer's block that the peer has announced as final (its "segment
  // ready" messages have arrived), straight from the peer's buffer into this rank's. Copying a
  // segment soon after its owner wrote it finds it still in the shared cache.
  std::vector<size_t> copied(size, 0);
  auto copy_ready_segments = [&]() -> Status {
    for (int step = 1; step < size; ++step) {
      const int peer = (rank + step) % size;
      const uint64_t ready =
          std::min<uint64_t>(exchange.receives_completed(peer) - 1, segments_of(peer));
      for (; copied[peer] < ready; ++copied[peer]) {
        const size_t first = blocks.offset(peer) + copied[peer] * segment_elements;
        const size_t elements =
            std::min(segment_elements, blocks.offset(peer) + blocks.size(peer) - first);
        COHORT_RETURN_IF_ERROR(
            exchange.ReadPeerMemory(peer, announced[peer].address + first * element_size,
                                    data_ + first * element_size, elements * element_size));
      }
    }
    return Status::OK();
  };

  // This rank's block, a cache-sized segment at a time: read it from every peer into scratch,
  // reduce it into this rank's buffer, and tell every peer that the segment is final. In between,
  // copy the segments that peers finished.
  if (scratch_->size() < segment_elements * element_size) {
    scratch_->resize(segment_elements * element_size);
  }
  const size_t own_offset = blocks.offset(rank);
  const size_t own_size = blocks.size(rank);
  for (size_t done = 0; done < own_size; done += segment_elements) {
    const size_t elements = std::min(segment_elements, own_size - done);
    const size_t offset_bytes = (own_offset + done) * element_size;
    uint8_t* own = data_ + offset_bytes;
    for (int peer : peers) {
      COHORT_RETURN_IF_ERROR(exchange.ReadPeerMemory(peer, announced[peer].address + offset_bytes,
                                                     scratch_->data(), elements * element_size));
      ReduceInto(type_, op_, own, scratch_->data(), elements);
    }
    if (op_ == ReduceOp::kAverage) DivideInPlace(type_, own, elements, size);
    for (int peer : peers) exchange.Send(peer, nullptr, 0);  // this segment is final
    // Sends the notices, takes in the peers' notices, keeps heartbeats flowing.
    COHORT_RETURN_IF_ERROR(exchange.Service());
    COHORT_RETURN_IF_ERROR(copy_ready_segments());
  }
  // The segments still missing, as their owners finish them.
  for (int step = 1; step < size; ++step) {
    const int peer = (rank + step) % size;
    while (copied[peer] < segments_of(peer)) {
      COHORT_RETURN_IF_ERROR(exchange.WaitForReceives(peer, 1 + copied[peer] + 1));
      COHORT_RETURN_IF_ERROR(copy_ready_segments());
    }
  }
  for (int peer : peers) exchange.Send(peer, nullptr, 0);  // done reading your buffer
  // Peers may still be reading this rank's block: wait until each says it is done. Nothing ever
  // writes into another process's buffer, so a rank that gives up early (a peer failed) leaves
  // the others' memory alone.
  COHORT_RETURN_IF_ERROR(exchange.Finish());
  return ConfirmNoPeerGaveUp(exchange);
}

namespace {

// Sends this rank's announcement to every peer and waits for theirs, checking that each names a
// buffer of `bytes`. The receives for the announcements must be posted first.
Status ExchangeAnnouncements(net::PeerExchange& exchange, const OperationContext& context,
                             const std::vector<int>& peers, const void* buffer, size_t bytes,
                             const std::vector<AnnouncementWire>& wires,
                             std::vector<BufferAnnouncement>* announced) {
  const AnnouncementWire mine = Encode(buffer, bytes);
  for (int peer : peers) exchange.Send(peer, mine.bytes, kAnnouncementSize);
  for (int peer : peers) {
    COHORT_RETURN_IF_ERROR(exchange.WaitForReceives(peer, 1));
    (*announced)[peer] = Decode(wires[peer]);
    COHORT_RETURN_IF_ERROR(CheckAnnouncedSize(exchange, context, peer, (*announced)[peer], bytes));
  }
  return Status::OK();
}

}  // namespace

StatusOr<std::vector<uint64_t>> ExchangeBufferAddresses(const OperationContext& context,
                                                        const std::vector<int>& peers,
                                                        const void* data, size_t bytes) {
  net::ConnectionSet& connections = *context.connections;
  std::unique_ptr<net::PeerExchange> opened =
      connections.OpenExchange(peers, context.tag, context.description, context.deadline);
  net::PeerExchange& exchange = *opened;
  COHORT_RETURN_IF_ERROR(exchange.status());
  std::vector<AnnouncementWire> wires(connections.size());
  for (int peer : peers) exchange.Receive(peer, wires[peer].bytes, kAnnouncementSize);
  std::vector<BufferAnnouncement> announced(connections.size());
  COHORT_RETURN_IF_ERROR(
      ExchangeAnnouncements(exchange, context, peers, data, bytes, wires, &announced));
  COHORT_RETURN_IF_ERROR(exchange.Finish());
  std::vector<uint64_t> addresses(connections.size(), 0);
  for (int peer : peers) addresses[peer] = announced[peer].address;
  return addresses;
}

// Pieces of long copies, between which heartbeats keep flowing.
constexpr size_t kCopyPiece = 16u << 20;

Status CopyFromPeer(net::PeerExchange& exchange, int peer, uint64_t address, uint8_t* destination,
                    size_t bytes) {
  for (size_t done = 0; done < bytes; done += kCopyPiece) {
    size_t piece = std::min(kCopyPiece, bytes - done);
    COHORT_RETURN_IF_ERROR(
        exchange.ReadPeerMemory(peer, address + done, destination + done, piece));
    COHORT_RETURN_IF_ERROR(exchange.Service());
  }
  return Status::OK();
}

Status ReduceFromPeers(net::PeerExchange& exchange, const std::vector<int>& peers,
                       const std::vector<uint64_t>& addresses, void* data, size_t offset,
                       size_t count, DataType type, ReduceOp op, size_t segment_bytes,
                       std::vector<uint8_t>* scratch) {
  const size_t element_size = SizeOf(type);
  const size_t piece_elements = SegmentElements(segment_bytes, element_size);
  if (scratch->size() < piece_elements * element_size) {
    scratch->resize(piece_elements * element_size);
  }
  for (size_t done = 0; done < count; done += piece_elements) {
    const size_t elements = std::min(piece_elements, count - done);
    const size_t offset_bytes = (offset + done) * element_size;
    uint8_t* own = static_cast<uint8_t*>(data) + offset_bytes;
    for (int peer : peers) {
      COHORT_RETURN_IF_ERROR(exchange.ReadPeerMemory(peer, addresses[peer] + offset_bytes,
                                                     scratch->data(), elements * element_size));
      ReduceInto(type, op, own, scratch->data(), elements);
    }
  }
  return Status::OK();
}

SameHostBroadcast::SameHostBroadcast(const OperationContext& context, void* data, size_t bytes,
                                     int root)
    : context_(context), data_(static_cast<uint8_t*>(data)), bytes_(bytes), root_(root) {}

Status SameHostBroadcast::Run() {
  net::ConnectionSet& connections = *context_.connections;
  if (bytes_ == 0 || connections.size() == 1) return Status::OK();
  const int rank = connections.rank();
  if (rank == root_) {
    const std::vector<int> peers = AllPeers(connections);
    std::unique_ptr<net::PeerExchange> opened =
        connections.OpenExchange(peers, context_.tag, context_.description, context_.deadline);
    net::PeerExchange& exchange = *opened;
    COHORT_RETURN_IF_ERROR(exchange.status());
    const AnnouncementWire mine = Encode(data_, bytes_);
    for (int peer : peers) {
      exchange.Receive(peer, nullptr, 0);  // done reading
      exchange.Send(peer, mine.bytes, kAnnouncementSize);
    }
    return exchange.Finish();
  }
  std::unique_ptr<net::PeerExchange> opened =
      connections.OpenExchange({root_}, context_.tag, context_.description, context_.deadline);
  net::PeerExchange& exchange = *opened;
  COHORT_RETURN_IF_ERROR(exchange.status());
  AnnouncementWire wire;
  exchange.Receive(root_, wire.bytes, kAnnouncementSize);
  COHORT_RETURN_IF_ERROR(exchange.WaitForReceives(root_, 1));
  const BufferAnnouncement announced = Decode(wire);
  COHORT_RETURN_IF_ERROR(CheckAnnouncedSize(exchange, context_, root_, announced, bytes_));
  COHORT_RETURN_IF_ERROR(CopyFromPeer(exchange, root_, announced.address, data_, bytes_));
  exchange.Send(root_, nullptr, 0);
  COHORT_RETURN_IF_ERROR(exchange.Finish());
  return ConfirmNoPeerGaveUp(exchange);
}

SameHostAllGather::SameHostAllGather(const OperationContext& context, void* output,
                                     size_t block_bytes)
    : context_(context), output_(static_cast<uint8_t*>(output)), block_bytes_(block_bytes) {}

Status SameHostAllGather::Run() {
  net::ConnectionSet& connections = *context_.connections;
  const int size = connections.size();
  const int rank = connections.rank();
  if (block_bytes_ == 0 || size == 1) return Status::OK();
  const std::vector<int> peers = AllPeers(connections);
  std::unique_ptr<net::PeerExchange> opened =
      connections.OpenExchange(peers, context_.tag, context_.description, context_.deadline);
  net::PeerExchange& exchange = *opened;
  COHORT_RETURN_IF_ERROR(exchange.status());
  std::vector<AnnouncementWire> wires(size);
  for (int peer : peers) {
    exchange.Receive(peer, wires[peer].bytes, kAnnouncementSize);
    exchange.Receive(peer, nullptr, 0);
  }
  // Announces this rank's block (inside `output`); peers copy it from there.
  const AnnouncementWire mine = Encode(output_ + rank * block_bytes_, block_bytes_);
  for (int peer : peers) exchange.Send(peer, mine.bytes, kAnnouncementSize);
  for (int step = 1; step < size; ++step) {
    const int peer = (rank + step) % size;
    COHORT_RETURN_IF_ERROR(exchange.WaitForReceives(peer, 1));
    const BufferAnnouncement announced = Decode(wires[peer]);
    COHORT_RETURN_IF_ERROR(CheckAnnouncedSize(exchange, context_, peer, announced, block_bytes_));
    COHORT_RETURN_IF_ERROR(CopyFromPeer(exchange, peer, announced.address,
                                        output_ + peer * block_bytes_, block_bytes_));
  }
  for (int peer : peers) exchange.Send(peer, nullptr, 0);  // done reading your block
  COHORT_RETURN_IF_ERROR(exchange.Finish());
  return ConfirmNoPeerGaveUp(exchange);
}

SameHostReduceScatter::SameHostReduceScatter(const OperationContext& context, const void* input,
                                             void* output, size_t count, DataType type, ReduceOp op,
                                             size_t segment_bytes, std::vector<uint8_t>* scratch)
    : context_(context),
      input_(static_cast<const uint8_t*>(input)),
      output_(static_cast<uint8_t*>(output)),
      count_(count),
      type_(type),
      op_(op),
      segment_bytes_(segment_bytes),
      scratch_(scratch) {}

Status SameHostReduceScatter::Run() {
  net::ConnectionSet& connections = *context_.connections;
  const int size = connections.size();
  const int rank = connections.rank();
  if (count_ == 0 || size == 1) return Status::OK();
  const size_t element_size = SizeOf(type_);
  const size_t block_bytes = count_ * element_size;
  const std::vector<int> peers = AllPeers(connections);
  std::unique_ptr<net::PeerExchange> opened =
      connections.OpenExchange(peers, context_.tag, context_.description, context_.deadline);
  net::PeerExchange& exchange = *opened;
  COHORT_RETURN_IF_ERROR(exchange.status());
  // From every peer: its announcement, then "I am done reading your input".
  std::vector<AnnouncementWire> wires(size);
  for (int peer : peers) {
    exchange.Receive(peer, wires[peer].bytes, kAnnouncementSize);
    exchange.Receive(peer, nullptr, 0);
  }
  std::vector<BufferAnnouncement> announced(size);
  COHORT_RETURN_IF_ERROR(ExchangeAnnouncements(exchange, context_, peers, input_,
                                               block_bytes * size, wires, &announced));
  // This rank's block, a cache-sized piece at a time: its own values, then every peer's added.
  const size_t piece_elements = SegmentElements(segment_bytes_, element_size);
  if (scratch_->size() < piece_elements * element_size) {
    scratch_->resize(piece_elements * element_size);
  }
  std::memcpy(output_, input_ + rank * block_bytes, block_bytes);
  for (size_t done = 0; done < count_; done += piece_elements) {
    const size_t elements = std::min(piece_elements, count_ - done);
    const size_t offset_bytes = rank * block_bytes + done * element_size;
    uint8_t* own = output_ + done * element_size;
    for (int peer : peers) {
      COHORT_RETURN_IF_ERROR(exchange.ReadPeerMemory(peer, announced[peer].address + offset_bytes,
                                                     scratch_->data(), elements * element_size));
      ReduceInto(type_, op_, own, scratch_->data(), elements);
    }
    if (op_ == ReduceOp::kAverage) DivideInPlace(type_, own, elements, size);
    COHORT_RETURN_IF_ERROR(exchange.Service());  // heartbeats keep flowing
  }
  for (int peer : peers) exchange.Send(peer, nullptr, 0);  // done reading your input
  COHORT_RETURN_IF_ERROR(exchange.Finish());
  return ConfirmNoPeerGaveUp(exchange);
}

}  // namespace cohort::collective
