// Watches: a chunked response per watch, fed from the store's event history under the
// server mutex and written outside it.

#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "fakeapi/fake_apiserver_impl.h"
#include "fakeapi/fake_apiserver_table.h"

namespace gpushare::testing {

using nlohmann::json;
using namespace fakeapi;

namespace {

constexpr auto kWatchPollInterval = std::chrono::milliseconds(100);
constexpr std::size_t kCoalescedPieceBytes = 16;

std::string frame(std::string_view type, const json& object) {
  // One JSON value per event, newline-terminated like Go's json.Encoder.
  return json{{"type", type}, {"object", object}}.dump() + "\n";
}

// An object's event; as a one-row Table for watches that asked for Tables (kubectl get -w).
std::string object_frame(const WatchSession& session, std::string_view type, const json& object) {
  if (!session.table) return frame(type, object);
  return frame(type,
               make_table(session.resource, {&object}, *session.table,
                          {{"resourceVersion", string_at(object, "metadata", "resourceVersion")}}));
}

std::string bookmark_frame(Resource resource, std::uint64_t rv, bool initial_events_end) {
  json object = {{"kind", info(resource).kind},
                 {"apiVersion", info(resource).api_version},
                 {"metadata", {{"resourceVersion", std::to_string(rv)}}}};
  if (initial_events_end) {
    object["metadata"]["annotations"] = {{"k8s.io/initial-events-end", "true"}};
  }
  return frame("BOOKMARK", object);
}

std::string too_old_frame(std::uint64_t requested, std::uint64_t compacted) {
  const ApiError error(410, "Expired",
                       fmt::format("too old resource version: {} ({})", requested, compacted));
  return frame("ERROR", error.status_body());
}

bool in_scope(const WatchSession& session, const json& object) {
  return (session.ns.empty() || namespace_of(object) == session.ns) &&
         session.fields.matches(object) && session.labels.matches(object);
}

// The event this watch sees for a store event, if any: selectors turn modifications into
// ADDED (entering) or DELETED (leaving, with the previous content and the new RV).
std::optional<std::string> view_of(const WatchSession& session, const HistoryEvent& event) {
  if (event.resource != session.resource) return std::nullopt;
  switch (event.type) {
    case EventType::Added:
      if (in_scope(session, event.object)) return object_frame(session, "ADDED", event.object);
      return std::nullopt;
    case EventType::Deleted:
      if (in_scope(session, event.previous)) return object_frame(session, "DELETED", event.object);
      return std::nullopt;
    case EventType::Modified: {
      const bool was_in = in_scope(session, event.previous);
      const bool is_in = in_scope(session, event.object);
      if (was_in && is_in) return object_frame(session, "MODIFIED", event.object);
      if (is_in) return object_frame(session, "ADDED", event.object);
      if (was_in) {
        json last = event.previous;
        last["metadata"]["resourceVersion"] = std::to_string(event.rv);
        return object_frame(session, "DELETED", last);
      }
      return std::nullopt;
    }
  }
  return std::nullopt;
}

bool write_frames(const std::vector<std::string>& frames, WatchFraming framing,
                  httplib::DataSink& sink) {
  auto write = [&](std::string_view piece) {
    return piece.empty() || sink.write(piece.data(), piece.size());
  };
  switch (framing) {
    case WatchFraming::OneEventPerChunk:
      return std::all_of(frames.begin(), frames.end(),
                         [&](const std::string& f) { return write(f); });
    case WatchFraming::SplitEvents:
      for (const std::string& f : frames) {
        const std::size_t third = std::max<std::size_t>(1, f.size() / 3);
        const std::string_view view(f);
        if (!write(view.substr(0, third)) || !write(view.substr(third, third)) ||
            !write(view.substr(std::min(view.size(), 2 * third)))) {
          return false;
        }
      }
      return true;
    case WatchFraming::CoalesceEvents:
    case WatchFraming::SplitAndCoalesce: {
      std::string joined;
      for (const std::string& f : frames) joined += f;
      if (framing == WatchFraming::CoalesceEvents) return write(joined);
      for (std::size_t offset = 0; offset < joined.size(); offset += kCoalescedPieceBytes) {
        if (!write(std::string_view(joined).substr(offset, kCoalescedPieceBytes))) return false;
      }
      return true;
    }
  }
  return false;
}

}  // namespace

void FakeApiServer::Impl::serve_watch(const Route& route, const httplib::Request& request,
                                      httplib::Response& response) {
  const Resource resource = *route.resource;
  const ListParams params = parse_list_params(request);
  validate_list_options(params, /*watch=*/true);

  auto session = std::make_shared<WatchSession>();
  session->resource = resource;
  session->ns = route.ns;
  session->fields = FieldSelector::parse(resource, params.field_selector);
  session->labels = LabelSelector::parse(params.label_selector);
  session->allow_bookmarks = params.allow_bookmarks;
  session->table =
      table_request(request.get_header_value("Accept"), request.get_param_value("includeObject"));
  session->connection = FakeHttpServer::current_connection();
  if (params.timeout_seconds && *params.timeout_seconds > 0) {
    session->deadline = Clock::now() + std::chrono::seconds(*params.timeout_seconds);
  }
  if (options.watch_lifetime.count() > 0) {
    // Like the real server's min-request-timeout × random [1, 2).
    thread_local std::mt19937 random{std::random_device{}()};
    const double factor = std::uniform_real_distribution<double>(1.0, 2.0)(random);
    const auto lifetime =
        std::chrono::duration_cast<Clock::duration>(options.watch_lifetime * factor);
    const auto server_deadline = Clock::now() + lifetime;
    session->deadline =
        session->deadline ? std::min(*session->deadline, server_deadline) : server_deadline;
  }
  const std::string& rv = params.resource_version;
  const bool from_now = rv.empty() || rv == "0";
  const std::uint64_t requested = from_now ? 0 : parse_resource_version(rv);
  {
    std::lock_guard lock(mutex);
    session->next_periodic_bookmark = Clock::now() + bookmark_interval;
    session->bookmarks_seen = bookmark_generation;
    const bool initial_events = params.send_initial_events.value_or(from_now);
    if (initial_events) {
      // Synthetic ADDEDs for the current state (sendInitialEvents=true reads "not older
      // than" the RV, so the current state serves it too).
      for (const auto& [key, object] : store.objects(resource)) {
        if (in_scope(*session, object))
          session->pending.push_back(object_frame(*session, "ADDED", object));
      }
      session->cursor = store.current_rv();
      const bool annotate =
          params.send_initial_events.value_or(false) || options.initial_events_end_bookmark;
      if (session->allow_bookmarks && annotate) {
        session->pending.push_back(bookmark_frame(resource, session->cursor, true));
      }
    } else if (from_now) {
      session->cursor = store.current_rv();
    } else if (requested < store.compacted_rv()) {
      // The watch still succeeds (200); the error is the only event.
      session->pending.push_back(too_old_frame(requested, store.compacted_rv()));
      session->finish_after_pending = true;
    } else {
      session->cursor = requested;
    }
    watches.push_back(session);
  }
  changed.notify_all();

  response.status = 200;
  response.set_chunked_content_provider(
      "application/json",
      [this, session](std::size_t, httplib::DataSink& sink) { return pump_watch(*session, sink); },
      [this, session](bool) { unregister_watch(session); });
}

void FakeApiServer::Impl::unregister_watch(const std::shared_ptr<WatchSession>& session) {
  {
    std::lock_guard lock(mutex);
    watches.erase(std::remove(watches.begin(), watches.end(), session), watches.end());
  }
  changed.notify_all();
}

// Called by httplib again and again while it returns true: waits for something to send,
// sends it, and ends the stream cleanly (done) or abruptly (false).
bool FakeApiServer::Impl::pump_watch(WatchSession& session, httplib::DataSink& sink) {
  std::vector<std::string> frames;
  bool finish = false;
  WatchFraming framing_now = WatchFraming::OneEventPerChunk;
  {
    std::unique_lock lock(mutex);
    for (;;) {
      if (stopping || session.drop_requested ||
          (session.connection != nullptr && session.connection->aborted())) {
        return false;
      }
      frames = std::exchange(session.pending, {});
      finish = session.finish_after_pending;
      if (!finish && !events_held) {
        if (session.cursor < store.compacted_rv()) {
          // The history this watch still needed is gone (it fell behind a compaction).
          frames.push_back(too_old_frame(session.cursor, store.compacted_rv()));
          finish = true;
        } else {
          for (auto it = store.events_after(session.cursor); it != store.history_end(); ++it) {
            if (auto event = view_of(session, *it)) frames.push_back(std::move(*event));
          }
          session.cursor = std::max(session.cursor, store.current_rv());
        }
      }
      const auto now = Clock::now();
      // A watch from a future RV gets no bookmark until the server has reached that RV.
      if (!finish && frames.empty() && session.allow_bookmarks &&
          session.cursor <= store.current_rv()) {
        const bool periodic_due =
            bookmark_interval.count() > 0 && now >= session.next_periodic_bookmark;
        if (session.bookmarks_seen != bookmark_generation || periodic_due) {
          frames.push_back(bookmark_frame(session.resource, session.cursor, false));
          session.bookmarks_seen = bookmark_generation;
          session.next_periodic_bookmark = now + bookmark_interval;
        }
      }
      if (session.close_requested || (session.deadline && now >= *session.deadline)) finish = true;
      if (!frames.empty() || finish) break;
      // Nothing to send: notice a client that went away, or wait for a change.
      if (session.connection != nullptr && session.connection->peer_closed()) return false;
      auto wake = now + kWatchPollInterval;
      if (session.deadline) wake = std::min(wake, *session.deadline);
      if (session.allow_bookmarks && bookmark_interval.count() > 0) {
        wake = std::min(wake, session.next_periodic_bookmark);
      }
      changed.wait_until(lock, wake);
    }
    framing_now = framing;
  }
  if (!frames.empty() && !write_frames(frames, framing_now, sink)) return false;
  if (finish) sink.done();
  return true;
}

}  // namespace gpushare::testing
