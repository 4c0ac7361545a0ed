#include "train/loop/callback_list.h"


namespace tnt::train {
namespace {
const Logs& pick(const Callback& cb, const Logs& global, const Logs& local) {
  return cb.aggregate_logs ? global : local;
}
const Logs kNoLogs;
}  // namespace

CallbackList::CallbackList(std::vector<CallbackPtr> callbacks, Driver driver, const Params& params,
                           bool master)
    : callbacks_(std::move(callbacks)), master_(master) {
  for (auto& cb : callbacks_) {
    cb->set_host(driver.host);
    cb->set_model(driver.model);
    cb->set_params(params);
    cb->set_master(master);
  }
}

template <typename Fn>
void CallbackList::each(Fn fn) {
  for (auto& cb : callbacks_) {
    if (cb->run_on_all_ranks || master_) fn(*cb);
  }
}

void CallbackList::train_begin() {
  each([](Callback& c) { c.on_train_begin(kNoLogs); });
}
void CallbackList::train_end(const Logs& g, const Logs& l) {
  each([&](Callback& c) { c.on_train_end(pick(c, g, l)); });
}
void CallbackList::epoch_begin(std::int64_t e) {
  each([&](Callback& c) { c.on_epoch_begin(e, kNoLogs); });
}
void CallbackList::epoch_end(std::int64_t e, const Logs& g, const Logs& l) {
  each([&](Callback& c) { c.on_epoch_end(e, pick(c, g, l)); });
}
void CallbackList::train_batch_begin(std::int64_t b) {
  each([&](Callback& c) { c.on_train_batch_begin(b, kNoLogs); });
}
void CallbackList::train_batch_end(std::int64_t b, const ReadLogs& read) {
  each([&](Callback& c) {
    c.on_train_batch_end(b, c.wants_batch_logs(b) ? read(c.aggregate_logs) : kNoLogs);
  });
}
void CallbackList::step_times(const StepTimesWindow& w) {
  each([&](Callback& c) {
    if (auto* listener = dynamic_cast<StepTimesListener*>(&c)) listener->on_step_times(w);
  });
}
void CallbackList::test_begin() {
  each([](Callback& c) { c.on_test_begin(kNoLogs); });
}
void CallbackList::test_end(const Logs& g, const Logs& l) {
  each([&](Callback& c) { c.on_test_end(pick(c, g, l)); });
}
void CallbackList::test_batch_begin(std::int64_t b) {
  each([&](Callback& c) { c.on_test_batch_begin(b, kNoLogs); });
}
// Per-batch evaluation logs are the rank's running values for every
// callback: a global value per batch would cost a collective per step.
void CallbackList::test_batch_end(std::int64_t b, const ReadLogs& read) {
  each([&](Callback& c) { c.on_test_batch_end(b, c.wants_batch_logs(b) ? read(false) : kNoLogs); });
}
void CallbackList::predict_begin() {
  each([](Callback& c) { c.on_predict_begin(kNoLogs); });
}
void CallbackList::predict_end() {
  each([](Callback& c) { c.on_predict_end(kNoLogs); });
}
void CallbackList::predict_batch_begin(std::int64_t b) {
  each([&](Callback& c) { c.on_predict_batch_begin(b, kNoLogs); });
}
void CallbackList::predict_batch_end(std::int64_t b) {
  each([&](Callback& c) { c.on_predict_batch_end(b, kNoLogs); });
}

}  // namespace tnt::train
