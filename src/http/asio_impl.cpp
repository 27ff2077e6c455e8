// The compiled parts of Boost.Asio and Boost.Beast, once for the whole
// program (strata_http defines BOOST_ASIO_SEPARATE_COMPILATION and
// BOOST_BEAST_SEPARATE_COMPILATION for itself and its users), so every
// other translation unit only parses their declarations.
#include <boost/asio/impl/src.hpp>
#include <boost/beast/src.hpp>
