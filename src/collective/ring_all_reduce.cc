#include "collective/ring_all_reduce.h"

#include <algorithm>
#include <deque>

#include "collective/reduction.h"
#include "collective/zero_skipping.h"
#include "net/connection_set.h"

namespace cohort::collective {

RingAllReduce::RingAllReduce(const OperationContext& context, void* data, size_t count,
                             DataType type, ReduceOp op, RingTuning tuning,
                             std::vector<uint8_t>* scratch, RingPlan plan)
    : context_(context),
      data_(static_cast<uint8_t*>(data)),
      count_(count),
      type_(type),
      op_(op),
      tuning_(tuning),
      scratch_(scratch),
      plan_(std::move(plan)) {
  members_ = plan_.members;
  if (members_.empty()) {
    for (int rank = 0; rank < context_.connections->size(); ++rank) members_.push_back(rank);
  }
  auto self = std::find(members_.begin(), members_.end(), context_.connections->rank());
  if (self != members_.end()) position_ = static_cast<int>(self - members_.begin());
}

std::vector<RingAllReduce::Segment> RingAllReduce::ReceiveSchedule(size_t segment_elements) const {
  const int size = ring_size();
  const int position = position_;
  BlockPartition blocks(count_, size);
  std::vector<Segment> schedule;
  auto add_block = [&](bool reduce_scatter, int step, int block) {
    size_t offset = blocks.offset(block);
    size_t elements = blocks.size(block);
    for (size_t done = 0; done < elements; done += segment_elements) {
      schedule.push_back(
          {reduce_scatter, step, offset + done, std::min(segment_elements, elements - done)});
    }
  };
  // Step s of reduce-scatter brings block (position - s - 1); step s of all-gather brings the
  // fully reduced block (position - s), which its owner, the left neighbour's left..., sent around.
  if (plan_.reduce_scatter) {
    for (int step = 0; step < size - 1; ++step)
      add_block(true, step, (position - step - 1 + size) % size);
  }
  if (plan_.all_gather) {
    for (int step = 0; step < size - 1; ++step)
      add_block(false, step, (position - step + size) % size);
  }
  return schedule;
}

int RingAllReduce::left() const { return members_[(position_ - 1 + ring_size()) % ring_size()]; }

int RingAllReduce::right() const { return members_[(position_ + 1) % ring_size()]; }

Status RingAllReduce::Run() {
  if (position_ < 0 || count_ == 0 || ring_size() == 1) return RunAlone();
  std::unique_ptr<net::PeerExchange> opened = context_.connections->OpenExchange(
      {left(), right()}, context_.tag, context_.description, context_.deadline);
  net::PeerExchange& exchange = *opened;
  COHORT_RETURN_IF_ERROR(exchange.status());
  COHORT_RETURN_IF_ERROR(RunWith(exchange));
  return exchange.Finish();
}

Status RingAllReduce::RunAlone() {
  if (position_ < 0) {
    return Status::Internal(context_.description + ": this rank is not a member of its ring");
  }
  const int average_over = plan_.average_over == 0 ? ring_size() : plan_.average_over;
  if (count_ > 0 && ring_size() == 1 && op_ == ReduceOp::kAverage && plan_.reduce_scatter &&
      average_over > 1) {
    DivideInPlace(type_, data_, count_, average_over);
  }
  return Status::OK();
}

Status RingAllReduce::RunWith(net::PeerExchange& exchange) {
  const int size = ring_size();
  if (position_ < 0 || count_ == 0 || size == 1) return RunAlone();
  const int average_over = plan_.average_over == 0 ? size : plan_.average_over;
  const bool divide = op_ == ReduceOp::kAverage && plan_.reduce_scatter && average_over > 1;

  const size_t element_size = SizeOf(type_);
  const size_t segment_elements = SegmentElements(
      std::min(tuning_.segment_bytes, context_.connections->MaxMessageBytes()), element_size);
  const int left = this->left();
  const int right = this->right();
  const std::vector<Segment> schedule = ReceiveSchedule(segment_elements);

  // Reduce-scatter starts by sending this rank's own block (block `position`), untouched; an
  // all-gather alone starts by sending the block this rank holds reduced.
  BlockPartition blocks(count_, size);
  const int first_block =
      plan_.reduce_scatter ? position_ : OwnedBlockAfterReduceScatter(position_, size);

  // Whether a segment received is sent on: every reduce-scatter step but the last feeds the next,
  // the last the first all-gather step, and all-gather segments travel until the last step.
  auto passed_on = [&](const Segment& segment) {
    const bool last_step = segment.step == size - 2;
    return !last_step || (segment.reduce_scatter && plan_.all_gather);
  };
  size_t reduce_scatter_segments = 0;
  size_t largest_segment = 0;
  // Every send of the operation: the first block's segments and the segments passed on.
  size_t send_count = SegmentCount(blocks.size(first_block), segment_elements);
  size_t send_elements = blocks.size(first_block);
  for (const Segment& segment : schedule) {
    if (segment.reduce_scatter) ++reduce_scatter_segments;
    largest_segment = std::max(largest_segment, segment.elements);
    if (passed_on(segment)) {
      ++send_count;
      send_elements += segment.elements;
    }
  }
  const size_t slot_bytes = largest_segment * element_size;
  const size_t slots = std::min<size_t>(std::max(tuning_.receive_slots, 1),
                                        std::max<size_t>(reduce_scatter_segments, 1));
  const size_t slots_bytes = reduce_scatter_segments > 0 ? slots * slot_bytes : 0;

  const bool accept_encoded = tuning_.skip_zero_words && element_size == 4;
  const bool encode = accept_encoded && plan_.right_on_another_host &&
                      ZeroSkippingLooksWorthwhile(reinterpret_cast<const uint32_t*>(data_), count_);
  // Each encoded send starts on a cache line and may write kZeroSkippingSlackBytes past its end.
  const size_t arena_offset = (slots_bytes + 63) / 64 * 64;
  const size_t arena_bytes =
      encode ? send_elements * element_size + send_count * (64 + kZeroSkippingSlackBytes) : 0;
  if (scratch_->size() < arena_offset + arena_bytes) scratch_->resize(arena_offset + arena_bytes);
  uint8_t* const scratch = scratch_->data();
  uint8_t* const arena = scratch + arena_offset;
  size_t arena_used = 0;

  size_t sends = 0;
  auto send = [&](const uint8_t* segment_data, size_t elements) {
    const size_t bytes = elements * element_size;
    if (encode &&
        ZeroSkippingLooksWorthwhile(reinterpret_cast<const uint32_t*>(segment_data), elements)) {
      uint8_t* out = arena + arena_used;
      const size_t encoded =
          EncodeZeroSkipping(reinterpret_cast<const uint32_t*>(segment_data), elements, out);
      if (encoded > 0) {
        arena_used += (encoded + 63) / 64 * 64;
        exchange.Send(right, out, encoded);
        ++sends;
        return;
      }
    }
    exchange.Send(right, segment_data, bytes);
    ++sends;
  };
  const bool prepare = plan_.reduce_scatter && plan_.prepare;

  for (size_t done = 0; done < blocks.size(first_block); done += segment_elements) {
    size_t elements = std::min(segment_elements, blocks.size(first_block) - done);
    if (prepare) {
      COHORT_RETURN_IF_ERROR(plan_.prepare(exchange, blocks.offset(first_block) + done, elements));
    }
    send(data_ + (blocks.offset(first_block) + done) * element_size, elements);
    // Moves what is ready while the next segment is prepared.
    if (prepare) COHORT_RETURN_IF_ERROR(exchange.Service());
  }

  std::deque<size_t> free_slots;
  for (size_t slot = 0; slot < slots; ++slot) free_slots.push_back(slot);
  std::vector<size_t> slot_of(schedule.size(), 0);
  std::vector<uint32_t> received_bytes(accept_encoded ? schedule.size() : 0);
  size_t posted = 0;
  // Posts receives in schedule order: reduce-scatter ones as scratch slots free up, all-gather
  // ones (straight into the caller's buffer) as soon as every reduce-scatter one is posted.
  auto post_receives = [&] {
    while (posted < schedule.size()) {
      const Segment& segment = schedule[posted];
      uint8_t* target;
      if (segment.reduce_scatter) {
        if (free_slots.empty()) return;
        slot_of[posted] = free_slots.front();
        free_slots.pop_front();
        target = scratch + slot_of[posted] * slot_bytes;
      } else {
        target = data_ + segment.offset * element_size;
      }
      if (accept_encoded) {
        exchange.ReceiveAtMost(left, target, segment.elements * element_size,
                               &received_bytes[posted]);
      } else {
        exchange.Receive(left, target, segment.elements * element_size);
      }
      ++posted;
    }
  };
  post_receives();

  for (size_t index = 0; index < schedule.size(); ++index) {
    COHORT_RETURN_IF_ERROR(exchange.WaitForReceives(left, index + 1));
    const Segment& segment = schedule[index];
    uint8_t* block_data = data_ + segment.offset * element_size;
    const size_t bytes = segment.elements * element_size;
    if (accept_encoded && received_bytes[index] != bytes) {
      uint8_t* arrived =
          segment.reduce_scatter ? scratch + slot_of[index] * slot_bytes : block_data;
      Status expanded = ExpandZeroSkippingInPlace(arrived, received_bytes[index], segment.elements);
      if (!expanded.ok()) {
        return exchange.Fail(Status::FailedPrecondition(
            context_.connections->PeerName(left) + " sent " +
            std::to_string(received_bytes[index]) + " bytes where " + std::to_string(bytes) +
            " bytes or their zero-skipping encoding were expected (" + expanded.message() +
            "): the tasks called the same collective with different sizes or options"));
      }
    }
    if (segment.reduce_scatter) {
      if (prepare)
        COHORT_RETURN_IF_ERROR(plan_.prepare(exchange, segment.offset, segment.elements));
      ReduceInto(type_, op_, block_data, scratch + slot_of[index] * slot_bytes, segment.elements);
      free_slots.push_back(slot_of[index]);
      if (segment.step == size - 2 && divide) {
        DivideInPlace(type_, block_data, segment.elements, average_over);
      }
    }
    if (passed_on(segment)) send(block_data, segment.elements);
    post_receives();
  }
  return exchange.WaitForSends(right, sends);
}

}  // namespace cohort::collective
