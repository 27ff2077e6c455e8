// Internal to src/http: IoWorker, one I/O thread of an HttpServer: its
// io_context, the Poster other threads use to reach it, and the
// connections it owns (touched only on its thread).
//
// The registry holds the open connections strongly (a connection waiting
// for a slow handler may have no pending operation at all); close_now()
// removes its entry. Member order matters: `connections` is declared after
// `ioc`, so it is destroyed first and the sockets it still holds close
// while their io_context exists.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <optional>
#include <thread>
#include <unordered_map>

#include "http/server_core.h"

namespace strata::http::detail {

class Connection;

struct IoWorker {
  IoWorker() : ioc(1), poster(std::make_shared<Poster>(&ioc)), work(ioc.get_executor()) {}

  boost::asio::io_context ioc;
  std::shared_ptr<Poster> poster;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work;
  std::unordered_map<Connection*, std::shared_ptr<Connection>> connections;
  std::thread thread;
};

}  // namespace strata::http::detail
