#include "gpushare/apiclient/api_error.h"

#include <gtest/gtest.h>

#include "gpushare/apiclient/watch_event.h"
#include "test_util.h"

namespace gpushare::apiclient {
namespace {

using namespace std::chrono_literals;

TEST(ApiError, DecodesStatusBody) {
  const std::string body = R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
    "message":"Operation cannot be fulfilled on pods/binding \"p1\": pod p1 is already assigned to node \"n0\"",
    "reason":"Conflict","details":{"name":"p1","kind":"pods/binding","uid":"u-1",
    "causes":[{"reason":"FieldValueInvalid","message":"bad","field":"spec.nodeName"}]},"code":409})";
  const ApiError error = error_from_response(409, body);
  EXPECT_EQ(error.kind, ErrorKind::kStatus);
  EXPECT_EQ(error.http_code, 409);
  EXPECT_EQ(error.reason, "Conflict");
  EXPECT_TRUE(error.is_conflict());
  EXPECT_FALSE(error.is_not_found());
  EXPECT_EQ(error.details.name, "p1");
  EXPECT_EQ(error.details.kind, "pods/binding");
  EXPECT_EQ(error.details.uid, "u-1");
  ASSERT_EQ(error.details.causes.size(), 1u);
  EXPECT_EQ(error.details.causes[0].field, "spec.nodeName");
  EXPECT_NE(error.message.find("already assigned"), std::string::npos);
  EXPECT_NE(error.describe().find("409 Conflict"), std::string::npos);
}

TEST(ApiError, DecisionsUseCodeAndReasonNotMessage) {
  // A message that mentions another condition must not change the classification.
  const ApiError error = error_from_response(
      404, testing::status_body(404, "NotFound", "the object has been modified; Conflict"));
  EXPECT_TRUE(error.is_not_found());
  EXPECT_FALSE(error.is_conflict());
}

TEST(ApiError, ExpiredAndGone) {
  EXPECT_TRUE(
      error_from_response(410, testing::status_body(410, "Expired", "too old")).is_expired());
  EXPECT_TRUE(error_from_response(410, "").is_expired());
  // An in-stream ERROR event: HTTP was 200; the Status carries the code and reason.
  const ApiError gone = error_from_status_object(nlohmann::json::parse(
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"x","reason":"Gone","code":410})"));
  EXPECT_TRUE(gone.is_expired());
  EXPECT_EQ(gone.http_code, 410);
  const ApiError reason_only = error_from_status_object(
      nlohmann::json{{"kind", "Status"}, {"reason", "Expired"}, {"message", "old"}});
  EXPECT_TRUE(reason_only.is_expired());
  const ApiError other = error_from_status_object(
      nlohmann::json{{"kind", "Status"}, {"reason", "InternalError"}, {"code", 500}});
  EXPECT_FALSE(other.is_expired());
  EXPECT_TRUE(other.is_server_error());
}

TEST(ApiError, RetryAfterFromHeaderOrDetails) {
  const ApiError from_details = error_from_response(
      504,
      testing::status_body(
          504, "Timeout", "Too large resource version: 9, current: 5",
          {{"causes",
            {{{"reason", "ResourceVersionTooLarge"}, {"message", "Too large resource version"}}}},
           {"retryAfterSeconds", 1}}));
  EXPECT_EQ(from_details.server_retry_delay(), 1s);
  EXPECT_TRUE(from_details.is_resource_version_too_large());
  EXPECT_TRUE(from_details.is_timeout());

  const ApiError from_header = error_from_response(
      429, testing::status_body(429, "TooManyRequests", "slow down", {{"retryAfterSeconds", 9}}),
      std::chrono::seconds(3));
  EXPECT_EQ(from_header.server_retry_delay(), 3s) << "the header wins";
  EXPECT_TRUE(from_header.is_too_many_requests());
  EXPECT_FALSE(from_header.is_resource_version_too_large());
}

TEST(ApiError, NonStatusBodiesGetAReasonFromTheCode) {
  const ApiError html = error_from_response(502, "<html>Bad Gateway</html>");
  EXPECT_EQ(html.http_code, 502);
  EXPECT_EQ(html.reason, "");
  EXPECT_EQ(html.message, "<html>Bad Gateway</html>");
  EXPECT_TRUE(html.is_server_error());

  const ApiError conflict = error_from_response(409, "not json");
  EXPECT_EQ(conflict.reason, "Conflict");
  EXPECT_TRUE(conflict.is_conflict());

  EXPECT_EQ(error_from_response(500, "").message, "HTTP 500");
}

TEST(ApiError, TransportErrorsAreNotStatusErrors) {
  const ApiError error = transport_error(TransportFailure::kConnect, "refused");
  EXPECT_TRUE(error.is_connect_failure());
  EXPECT_FALSE(error.is_not_found());
  EXPECT_FALSE(error.is_server_error());
  EXPECT_NE(error.describe().find("connect"), std::string::npos);
  EXPECT_TRUE(transport_error(TransportFailure::kTimeout, "t").is_timeout());
}

}  // namespace
}  // namespace gpushare::apiclient
