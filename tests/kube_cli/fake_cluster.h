// FakeCluster: the objects of a cluster in memory behind the fake HTTPS API server
// (testing/fake_apiserver.h), answering as kube-apiserver does for what `cohort --kubernetes`
// asks: get, list (label selectors "k=v" and "k", field selector metadata.name=N, every namespace
// when the path has none), create (uid, resourceVersion, creationTimestamp stamped; 409 when the
// name is taken), JSON merge patch, delete, watch (the object's next version, or nothing until
// timeoutSeconds) and pod logs (current and previous, and followed as they grow). A resource type
// the cluster lacks answers 404 as a missing CRD does; `forbidden` answers every request 403.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <set>
#include <sstream>

#include "base/time.h"
#include "testing/fake_apiserver.h"

namespace cohort::kube::testing {

class FakeCluster {
 public:
  FakeCluster() {
    server_.Respond([this](const RecordedRequest& request, httplib::Response& response) {
      Answer(request, response);
    });
  }

  FakeApiServer& server() { return server_; }

  // Stores `object` under its apiVersion's path prefix and `plural`, as the server would.
  void Put(const std::string& prefix, const std::string& plural, nlohmann::json object) {
    std::lock_guard<std::mutex> lock(mutex_);
    object["metadata"]["resourceVersion"] = std::to_string(++version_);
    Key key{prefix, object["metadata"].value("namespace", ""), plural,
            object["metadata"].value("name", "")};
    objects_[key] = std::move(object);
    changed_.notify_all();
  }
  std::optional<nlohmann::json> Find(const std::string& prefix, const std::string& plural,
                                     const std::string& namespace_name, const std::string& name) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = objects_.find(Key{prefix, namespace_name, plural, name});
    if (found == objects_.end()) return std::nullopt;
    return found->second;
  }
  void SetLog(const std::string& pod, const std::string& text, bool previous = false) {
    std::lock_guard<std::mutex> lock(mutex_);
    logs_[pod + (previous ? "#previous" : "")] = text;
  }
  // More of a pod's current log, for a follower; EndLog closes its stream, as when the container
  // ends.
  void AppendLog(const std::string& pod, const std::string& text) {
    std::lock_guard<std::mutex> lock(mutex_);
    logs_[pod] += text;
    changed_.notify_all();
  }
  void EndLog(const std::string& pod) {
    std::lock_guard<std::mutex> lock(mutex_);
    ended_logs_.insert(pod);
    changed_.notify_all();
  }
  void RemoveTFJobType() { RemoveJobType("tfjobs"); }
  // Answers 404 for every path of `plural`, as a cluster without that CRD does.
  void RemoveJobType(const std::string& plural) {
    std::lock_guard<std::mutex> lock(mutex_);
    missing_plurals_.insert(plural);
  }
  void Forbid() { forbidden_ = true; }

 private:
  struct Key {
    std::string prefix, namespace_name, plural, name;
    bool operator<(const Key& other) const {
      return std::tie(prefix, namespace_name, plural, name) <
             std::tie(other.prefix, other.namespace_name, other.plural, other.name);
    }
  };
  // A request path taken apart: /api/v1/namespaces/NS/pods/NAME/log,
  // /apis/kubeflow.org/v1/namespaces/NS/tfjobs, /apis/kubeflow.org/v1/tfjobs...
  struct Target {
    std::string prefix, namespace_name, plural, name, subresource;
  };
  static Target Parse(const std::string& path) {
    std::vector<std::string> parts;
    std::stringstream stream(path);
    for (std::string part; std::getline(stream, part, '/');) {
      if (!part.empty()) parts.push_back(part);
    }
    Target target;
    size_t at = parts.size() > 0 && parts[0] == "api" ? 2 : 3;
    for (size_t i = 0; i < at && i < parts.size(); ++i) target.prefix += "/" + parts[i];
    if (at + 1 < parts.size() && parts[at] == "namespaces") {
      target.namespace_name = parts[at + 1];
      at += 2;
    }
    if (at < parts.size()) target.plural = parts[at];
    if (at + 1 < parts.size()) target.name = parts[at + 1];
    if (at + 2 < parts.size()) target.subresource = parts[at + 2];
    return target;
  }
  static bool Matches(const nlohmann::json& object, const RecordedRequest& request) {
    std::string labels = request.Param("labelSelector");
    if (labels != "<absent>" && !labels.empty()) {
      size_t equals = labels.find('=');
      nlohmann::json values = object["metadata"].value("labels", nlohmann::json::object());
      std::string key = labels.substr(0, equals);
      if (!values.contains(key)) return false;
      if (equals != std::string::npos && values[key] != labels.substr(equals + 1)) return false;
    }
    std::string fields = request.Param("fieldSelector");
    const std::string by_name = "metadata.name=";
    if (fields.rfind(by_name, 0) == 0 &&
        object["metadata"].value("name", "") != fields.substr(by_name.size())) {
      return false;
    }
    return true;
  }

  void Answer(const RecordedRequest& request, httplib::Response& response) {
    if (forbidden_) {
      SetStatus(response, 403, "Forbidden",
                "tfjobs.kubeflow.org is forbidden: User \"bob\" cannot " + request.method +
                    " resource \"tfjobs\" in API group \"kubeflow.org\"");
      return;
    }
    Target target = Parse(request.path);
    std::unique_lock<std::mutex> lock(mutex_);
    if (missing_plurals_.count(target.plural) != 0) {
      SetStatus(response, 404, "NotFound", "the server could not find the requested resource");
      return;
    }
    Key key{target.prefix, target.namespace_name, target.plural, target.name};
    if (target.subresource == "log") {
      auto log = logs_.find(target.name + (request.Param("previous") == "true" ? "#previous" : ""));
      if (log == logs_.end()) {
        SetStatus(response, 400, "BadRequest",
                  "previous terminated container \"tensorflow\" in pod \"" + target.name +
                      "\" not found");
        return;
      }
      if (request.Param("follow") != "true") {
        response.set_content(log->second, "text/plain");
        return;
      }
      // The log as it grows, until EndLog (or 30 s without news).
      std::string pod = target.name;
      response.set_chunked_content_provider(
          "text/plain", [this, pod](size_t offset, httplib::DataSink& sink) {
            std::unique_lock<std::mutex> lock(mutex_);
            changed_.wait_for(lock, std::chrono::seconds(30), [&] {
              return logs_[pod].size() > offset || ended_logs_.count(pod) > 0;
            });
            if (logs_[pod].size() > offset) {
              std::string more = logs_[pod].substr(offset);
              lock.unlock();
              sink.write(more.data(), more.size());
              return true;
            }
            lock.unlock();
            sink.done();
            return true;
          });
      return;
    }
    if (request.method == "GET" && request.Param("watch") == "true") {
      // The next version of a matching object, within timeoutSeconds.
      int64_t since = std::stoll(request.Param("resourceVersion"));
      auto deadline = std::chrono::steady_clock::now() +
                      std::chrono::seconds(std::stoi(request.Param("timeoutSeconds")));
      std::string stream;
      changed_.wait_until(lock, deadline, [&] {
        for (const auto& [stored, object] : objects_) {
          if (stored.plural == target.plural && stored.namespace_name == target.namespace_name &&
              Matches(object, request) &&
              std::stoll(object["metadata"].value("resourceVersion", "0")) > since) {
            stream += nlohmann::json{{"type", "MODIFIED"}, {"object", object}}.dump() + "\n";
          }
        }
        return !stream.empty();
      });
      response.set_content(stream, "application/json");
      return;
    }
    if (request.method == "GET" && !target.name.empty()) {
      auto found = objects_.find(key);
      if (found == objects_.end()) return NotFound(response, target);
      SetJson(response, found->second);
      return;
    }
    if (request.method == "GET") {
      nlohmann::json items = nlohmann::json::array();
      for (const auto& [stored, object] : objects_) {
        if (stored.prefix == target.prefix && stored.plural == target.plural &&
            (target.namespace_name.empty() || stored.namespace_name == target.namespace_name) &&
            Matches(object, request)) {
          items.push_back(object);
        }
      }
      SetJson(response, {{"kind", "List"},
                         {"items", items},
                         {"metadata", {{"resourceVersion", std::to_string(version_)}}}});
      return;
    }
    if (request.method == "POST") {
      nlohmann::json object = nlohmann::json::parse(request.body);
      key.name = object["metadata"].value("name", "");
      if (objects_.count(key)) {
        SetStatus(response, 409, "AlreadyExists",
                  target.plural + ".kubeflow.org \"" + key.name + "\" already exists");
        return;
      }
      object["metadata"]["namespace"] = target.namespace_name;
      object["metadata"]["uid"] = "uid-" + key.name;
      object["metadata"]["creationTimestamp"] = FormatTime(Clock::now());
      object["metadata"]["resourceVersion"] = std::to_string(++version_);
      objects_[key] = object;
      response.status = 201;
      response.set_content(object.dump(), "application/json");
      return;
    }
    auto found = objects_.find(key);
    if (found == objects_.end()) return NotFound(response, target);
    if (request.method == "PATCH") {
      found->second.merge_patch(nlohmann::json::parse(request.body));
      found->second["metadata"]["resourceVersion"] = std::to_string(++version_);
      SetJson(response, found->second);
      changed_.notify_all();
      return;
    }
    if (request.method == "PUT") {
      found->second = nlohmann::json::parse(request.body);
      found->second["metadata"]["resourceVersion"] = std::to_string(++version_);
      SetJson(response, found->second);
      return;
    }
    if (request.method == "DELETE") {
      objects_.erase(found);
      SetJson(response, {{"kind", "Status"}, {"status", "Success"}});
      return;
    }
    SetStatus(response, 405, "MethodNotAllowed", request.method);
  }

  static void NotFound(httplib::Response& response, const Target& target) {
    SetStatus(response, 404, "NotFound", target.plural + " \"" + target.name + "\" not found");
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<Key, nlohmann::json> objects_;
  std::map<std::string, std::string> logs_;
  std::set<std::string> ended_logs_;
  int64_t version_ = 100;
  std::set<std::string> missing_plurals_;  // resource types the cluster lacks
  std::atomic<bool> forbidden_{false};
  FakeApiServer server_;  // last: it stops answering before the objects go
};

}  // namespace cohort::kube::testing
