#include "http/router.h"

#include <gtest/gtest.h>

namespace strata::http {
namespace {

Handler tagged(int* out, int tag) {
  return [out, tag](HttpRequest, ResponsePtr) { *out = tag; };
}

int run(const Router::Match& m) {
  return m.handler != nullptr ? 1 : 0;
}

TEST(RouterTest, ExactRoutesByMethod) {
  int hit = 0;
  Router r;
  r.add("GET", "/v1/models", tagged(&hit, 1));
  r.add("POST", "/v1/completions", tagged(&hit, 2));
  Router::Match m = r.find("GET", "/v1/models");
  ASSERT_EQ(m.outcome, Router::Outcome::kFound);
  (*m.handler)(HttpRequest{}, nullptr);
  EXPECT_EQ(hit, 1);
  m = r.find("POST", "/v1/completions");
  ASSERT_EQ(m.outcome, Router::Outcome::kFound);
  (*m.handler)(HttpRequest{}, nullptr);
  EXPECT_EQ(hit, 2);
  EXPECT_EQ(run(r.find("GET", "/v1/completions")), 0);
}

TEST(RouterTest, NotFoundAndMethodNotAllowed) {
  int hit = 0;
  Router r;
  r.add("GET", "/health", tagged(&hit, 1));
  r.add("POST", "/tokenize", tagged(&hit, 2));
  EXPECT_EQ(r.find("GET", "/nope").outcome, Router::Outcome::kNotFound);
  EXPECT_EQ(r.find("GET", "/health/").outcome, Router::Outcome::kNotFound);
  Router::Match m = r.find("POST", "/health");
  EXPECT_EQ(m.outcome, Router::Outcome::kMethodNotAllowed);
  EXPECT_EQ(m.allow, "GET, HEAD");
  m = r.find("GET", "/tokenize");
  EXPECT_EQ(m.outcome, Router::Outcome::kMethodNotAllowed);
  EXPECT_EQ(m.allow, "POST");
  EXPECT_EQ(r.find("get", "/health").outcome, Router::Outcome::kMethodNotAllowed);
}

TEST(RouterTest, HeadFallsBackToGet) {
  int hit = 0;
  Router r;
  r.add("GET", "/health", tagged(&hit, 1));
  Router::Match m = r.find("HEAD", "/health");
  ASSERT_EQ(m.outcome, Router::Outcome::kFound);
  (*m.handler)(HttpRequest{}, nullptr);
  EXPECT_EQ(hit, 1);
}

TEST(RouterTest, PrefixRoutesDecodeTheirParameter) {
  int hit = 0;
  Router r;
  r.add("GET", "/v1/models", tagged(&hit, 1));
  r.add_prefix("GET", "/v1/models/", tagged(&hit, 2));
  Router::Match m = r.find("GET", "/v1/models/org%2Fname");
  ASSERT_EQ(m.outcome, Router::Outcome::kFound);
  EXPECT_EQ(m.path_param, "org/name");
  (*m.handler)(HttpRequest{}, nullptr);
  EXPECT_EQ(hit, 2);
  m = r.find("GET", "/v1/models/a/b");
  ASSERT_EQ(m.outcome, Router::Outcome::kFound);
  EXPECT_EQ(m.path_param, "a/b");
  // An empty rest is not a match; a malformed escape neither.
  EXPECT_EQ(r.find("GET", "/v1/models/").outcome, Router::Outcome::kNotFound);
  EXPECT_EQ(r.find("GET", "/v1/models/%zz").outcome, Router::Outcome::kNotFound);
  EXPECT_EQ(r.find("DELETE", "/v1/models/x").outcome, Router::Outcome::kMethodNotAllowed);
}

TEST(RouterTest, ExactWinsOverPrefixAndLongestPrefixWins) {
  int hit = 0;
  Router r;
  r.add_prefix("GET", "/a/", tagged(&hit, 1));
  r.add_prefix("GET", "/a/b/", tagged(&hit, 2));
  r.add("GET", "/a/b/c", tagged(&hit, 3));
  (*r.find("GET", "/a/x").handler)(HttpRequest{}, nullptr);
  EXPECT_EQ(hit, 1);
  (*r.find("GET", "/a/b/x").handler)(HttpRequest{}, nullptr);
  EXPECT_EQ(hit, 2);
  (*r.find("GET", "/a/b/c").handler)(HttpRequest{}, nullptr);
  EXPECT_EQ(hit, 3);
  EXPECT_EQ(r.find("GET", "/a/b/x").path_param, "x");
}

}  // namespace
}  // namespace strata::http
