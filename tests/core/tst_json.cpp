// SPDX-License-Identifier: MIT
// The core's JSON library: strict parsing with errors that name the byte, limits that hold against
// hostile input, and a writer whose output always parses, here and in Python's json module.
//
// Why one file of about 630 lines: one suite per library is the layout of tests/, and its cases are
// many small tables (valid, invalid, limits, round trips) that read best next to each other.

#include "core/base/printablerun.h"
#include "core/json/json.h"

#include <QProcess>
#include <QRandomGenerator>
#include <QStandardPaths>
#include <QTest>

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

using namespace ckpt;

namespace {

// A document with every kind of value, nesting, escapes and non-ASCII text.
const std::string kSample
    = R"({"name":"enc\u00f6der.0 \"q\"\\\n","shape":[1,16,256],"offsets":[0,18446744073709551615],)"
      R"("neg":-9223372036854775808,"pi":3.25,"exp":-1.5E+3,"flags":[true,false,null],)"
      R"("nested":{"a":{"b":[[],{}]}},"emoji":"\ud83d\ude00 \u20ac","utf8":"caf)"
      "\xc3\xa9"
      R"("})";

QByteArray toQ(const std::string& text)
{
    return QByteArray(text.data(), static_cast<qsizetype>(text.size()));
}

std::string errorOf(std::string_view text, const JsonParseLimits& limits = {})
{
    const auto parsed = parseJson(text, limits);
    return parsed ? std::string("(parsed)") : parsed.error().message;
}

// Deterministic random documents for round trips.
JsonValue randomValue(QRandomGenerator& random, int depth, bool validUtf8Only)
{
    const int kind = depth > 4 ? static_cast<int>(random.bounded(6)) : static_cast<int>(random.bounded(8));
    auto randomString = [&] {
        std::string text;
        const int length = static_cast<int>(random.bounded(12));
        for (int i = 0; i < length; ++i) {
            if (validUtf8Only) {
                static const char* pieces[] = {"a", "\"", "\\", "\n", "\x01", "\x7f", "\xc3\xa9",
                    "\xe2\x82\xac", "\xf0\x9f\x98\x80", "/", " ", "\t"};
                text += pieces[random.bounded(12)];
            } else {
                text += static_cast<char>(random.bounded(256));
            }
        }
        return text;
    };
    switch (kind) {
    case 0:
        return JsonValue();
    case 1:
        return JsonValue(random.bounded(2) == 1);
    case 2:
        return JsonValue(static_cast<std::int64_t>(random.generate64()));
    case 3:
        return JsonValue(random.generate64());
    case 4: {
        double value = 0;
        do {
            const std::uint64_t bits = random.generate64();
            std::memcpy(&value, &bits, sizeof value);
        } while (!std::isfinite(value));
        return JsonValue(value);
    }
    case 5:
        return JsonValue(randomString());
    case 6: {
        JsonValue array = JsonValue::emptyArray();
        const int count = static_cast<int>(random.bounded(5));
        for (int i = 0; i < count; ++i)
            array.append(randomValue(random, depth + 1, validUtf8Only));
        return array;
    }
    default: {
        JsonValue object = JsonValue::emptyObject();
        const int count = static_cast<int>(random.bounded(5));
        // Unique keys, so that readers which keep only one of a repeated key agree.
        for (int i = 0; i < count; ++i)
            object.insert(
                randomString() + "#" + std::to_string(i), randomValue(random, depth + 1, validUtf8Only));
        return object;
    }
    }
}

} // namespace

class TestJson : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void parsesEveryKindOfValue()
    {
        const auto parsed = parseJson(kSample);
        QVERIFY2(parsed, parsed ? "" : parsed.error().message.c_str());
        const JsonValue& doc = *parsed;
        QVERIFY(doc.isObject());
        QCOMPARE(doc.size(), std::size_t {10});
        QCOMPARE(doc.members()[0].key, std::string("name"));
        QCOMPARE(doc.member("name").toString(),
            std::string("enc\xc3\xb6"
                        "der.0 \"q\"\\\n"));
        QCOMPARE(doc.member("shape").size(), std::size_t {3});
        QCOMPARE(doc.member("shape").at(2).toInt64(), std::optional<std::int64_t>(256));
        QCOMPARE(
            doc.member("offsets").at(1).toUInt64(), std::optional<std::uint64_t>(18446744073709551615ull));
        QVERIFY(!doc.member("offsets").at(1).toInt64());
        QCOMPARE(doc.member("neg").toInt64(),
            std::optional<std::int64_t>(std::numeric_limits<std::int64_t>::min()));
        QVERIFY(!doc.member("neg").toUInt64());
        QVERIFY(doc.member("pi").isDouble());
        QCOMPARE(doc.member("pi").toDouble(), 3.25);
        QCOMPARE(doc.member("exp").toDouble(), -1500.0);
        QCOMPARE(doc.member("flags").at(0).toBool(), true);
        QCOMPARE(doc.member("flags").at(1).toBool(true), false);
        QVERIFY(doc.member("flags").at(2).isNull());
        QVERIFY(doc.member("nested").member("a").member("b").at(0).isArray());
        QVERIFY(doc.member("nested").member("a").member("b").at(1).isObject());
        QCOMPARE(doc.member("emoji").toString(), std::string("\xf0\x9f\x98\x80 \xe2\x82\xac"));
        QCOMPARE(doc.member("utf8").toString(), std::string("caf\xc3\xa9"));
        // Absent things are null, and lookups on the wrong type are harmless.
        QVERIFY(doc.member("missing").member("deeper").at(3).isNull());
        QVERIFY(!doc.find("missing"));
        QCOMPARE(doc.member("name").size(), std::size_t {0});
        QVERIFY(doc.member("name").items().empty());
    }

    void integersStayExact_data()
    {
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<bool>("integer");
        QTest::addColumn<double>("asDouble");
        QTest::newRow("zero") << QByteArray("0") << true << 0.0;
        QTest::newRow("minus zero") << QByteArray("-0") << true << 0.0;
        QTest::newRow("int64 max") << QByteArray("9223372036854775807") << true << 9223372036854775807.0;
        QTest::newRow("above int64") << QByteArray("9223372036854775808") << true << 9223372036854775808.0;
        QTest::newRow("uint64 max") << QByteArray("18446744073709551615") << true << 18446744073709551615.0;
        QTest::newRow("above uint64")
            << QByteArray("18446744073709551616") << false << 18446744073709551616.0;
        QTest::newRow("below int64") << QByteArray("-9223372036854775809") << false << -9223372036854775809.0;
        QTest::newRow("fraction") << QByteArray("5.0") << false << 5.0;
        QTest::newRow("exponent") << QByteArray("5e0") << false << 5.0;
        QTest::newRow("tiny") << QByteArray("1e-400") << false << 0.0;
        QTest::newRow("tiny negative") << QByteArray("-0.0000001e-400") << false << -0.0;
    }
    void integersStayExact()
    {
        QFETCH(QByteArray, text);
        QFETCH(bool, integer);
        QFETCH(double, asDouble);
        const auto parsed
            = parseJson(std::string_view(text.constData(), static_cast<std::size_t>(text.size())));
        QVERIFY2(parsed, parsed ? "" : parsed.error().message.c_str());
        QCOMPARE(parsed->isInteger(), integer);
        QCOMPARE(parsed->isDouble(), !integer);
        QCOMPARE(parsed->toDouble(), asDouble);
        // A value written out reads back as the same value of the same kind.
        const auto again = parseJson(parsed->toJson());
        QVERIFY(again);
        QCOMPARE(again->toJson(), parsed->toJson());
        QVERIFY(*again == *parsed);
    }

    void integerAccessors()
    {
        QCOMPARE(JsonValue(std::uint64_t {5}).toInt64(), std::optional<std::int64_t>(5));
        QVERIFY(JsonValue(std::uint64_t {5}) == JsonValue(std::int64_t {5}));
        QVERIFY(JsonValue(5) == JsonValue(5u));
        QVERIFY(!(JsonValue(5) == JsonValue(5.0)));
        QCOMPARE(JsonValue(-1).toUInt64(), std::optional<std::uint64_t>());
        QCOMPARE(JsonValue(5.0).toInt64(), std::optional<std::int64_t>());
        QCOMPARE(JsonValue("5").toInt64(), std::optional<std::int64_t>());
        QCOMPARE(JsonValue(static_cast<short>(-3)).toInt64(), std::optional<std::int64_t>(-3));
        QCOMPARE(JsonValue(static_cast<unsigned char>(200)).toUInt64(), std::optional<std::uint64_t>(200));
        QCOMPARE(JsonValue(7ll).toInt64(), std::optional<std::int64_t>(7));
        QCOMPARE(JsonValue(7ull).toUInt64(), std::optional<std::uint64_t>(7));
    }

    void stringEscapes_data()
    {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QByteArray>("expected");
        // Not a raw string: Qt 6.4's moc loses the class after raw strings holding \" or a lone quote.
        QTest::newRow("simple escapes")
            << QByteArray("\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t\"") << QByteArray("\" \\ / \b \f \n \r \t");
        QTest::newRow("u0000") << QByteArray(R"("a\u0000b")") << QByteArray("a\0b", 3);
        QTest::newRow("latin") << QByteArray(R"("\u00E9\u00e9")") << QByteArray("\xc3\xa9\xc3\xa9");
        QTest::newRow("bmp") << QByteArray(R"("\u20ac\uFFFF")") << QByteArray("\xe2\x82\xac\xef\xbf\xbf");
        QTest::newRow("surrogate pair") << QByteArray(R"("\ud83d\ude00")") << QByteArray("\xf0\x9f\x98\x80");
        QTest::newRow("max code point") << QByteArray(R"("\uDBFF\uDFFF")") << QByteArray("\xf4\x8f\xbf\xbf");
        QTest::newRow("raw utf8") << QByteArray("\"\xf0\x9f\x98\x80\xe2\x82\xac\xc3\xa9\x7f\"")
                                  << QByteArray("\xf0\x9f\x98\x80\xe2\x82\xac\xc3\xa9\x7f");
    }
    void stringEscapes()
    {
        QFETCH(QByteArray, json);
        QFETCH(QByteArray, expected);
        const auto parsed
            = parseJson(std::string_view(json.constData(), static_cast<std::size_t>(json.size())));
        QVERIFY2(parsed, parsed ? "" : parsed.error().message.c_str());
        QCOMPARE(toQ(parsed->toString()), expected);
        const auto again = parseJson(parsed->toJson());
        QVERIFY(again);
        QCOMPARE(toQ(again->toString()), expected);
    }

    void malformedInputIsRefusedWithItsOffset_data()
    {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<qulonglong>("offset");
        QTest::addColumn<QString>("reason");
        auto row = [](const char* name, QByteArray json, qulonglong offset, const char* reason) {
            QTest::newRow(name) << json << offset << QString::fromUtf8(reason);
        };
        row("empty", "", 0, "unexpected end of input, expected a value");
        row("only space", "  \n", 3, "unexpected end of input, expected a value");
        row("missing colon", R"({"a" 1})", 5, "unexpected '1', expected ':' after object key");
        row("key not a string", "{a:1}", 1, "unexpected 'a', expected a string as object key");
        row("unclosed object", R"({"a":1)", 6,
            "unexpected end of input, expected ',' or '}' after an object member");
        row("unclosed array", "[1,2", 4,
            "unexpected end of input, expected ',' or ']' after an array element");
        row("trailing comma array", "[1,]", 3, "trailing comma before ']'");
        row("trailing comma object", R"({"a":1,})", 7, "trailing comma before '}'");
        row("trailing data", "{} x", 3, "unexpected 'x' after the end of the JSON value");
        row("two values", "1 2", 2, "unexpected '2' after the end of the JSON value");
        row("leading zero", "01", 0, "numbers must not have leading zeros");
        row("plus", "+1", 0, "unexpected '+', expected a value");
        row("bare minus", "-", 1, "unexpected end of input, expected a digit after '-'");
        row("minus letter", "-a", 1, "unexpected 'a', expected a digit after '-'");
        row("dot", "1.", 2, "unexpected end of input, expected a digit after the decimal point");
        row("leading dot", ".5", 0, "unexpected '.', expected a value");
        row("empty exponent", "1e+", 3, "unexpected end of input, expected a digit in the exponent");
        row("huge", "1e400", 0, "number 1e400 is too large for a double");
        row("nan", "NaN", 0, "unexpected 'N', expected a value");
        row("infinity", "-Infinity", 1, "unexpected 'I', expected a digit after '-'");
        row("tru", "tru", 0, "invalid literal, expected 'true'");
        row("nul", "[nul]", 1, "invalid literal, expected 'null'");
        row("single quotes", "'a'", 0, "unexpected ''', expected a value");
        row("comment", "// x\n1", 0, "unexpected '/', expected a value");
        row("bom", "\xef\xbb\xbf{}", 0, "a UTF-8 byte-order mark is not allowed before JSON text");
        row("unterminated string", "[\"abc", 5, "unterminated string (it starts at byte 1)");
        row("raw newline", "\"a\nb\"", 2, "control character U+000A inside a string must be escaped");
        row("raw tab", "\"a\tb\"", 2, "control character U+0009 inside a string must be escaped");
        row("bad escape", R"("\x")", 1,
            "invalid escape: a backslash followed by 'x' (valid escapes: \\\" \\\\ \\/ \\b \\f \\n \\r \\t "
            "\\uXXXX)");
        row("short u", R"("\u12")", 1, "\\u must be followed by four hex digits");
        row("lone high", R"("\ud83d")", 1,
            "high surrogate \\ud83d is not followed by a low surrogate \\uDC00-\\uDFFF; text with a lone "
            "surrogate has "
            "no UTF-8 form");
        row("high then other", R"("\ud83d\u0041")", 1,
            "high surrogate \\ud83d is not followed by a low surrogate \\uDC00-\\uDFFF; text with a lone "
            "surrogate has "
            "no UTF-8 form");
        row("lone low", R"("\ude00")", 1,
            "lone low surrogate \\ude00 (a low surrogate may only follow a high surrogate \\uD800-\\uDBFF)");
        row("overlong", "\"\xc0\x80\"", 1, "invalid UTF-8 (byte 0xC0) inside a string");
        row("overlong 3", "\"\xe0\x80\xaf\"", 1, "invalid UTF-8 (byte 0xE0) inside a string");
        row("encoded surrogate", "\"\xed\xa0\x80\"", 1, "invalid UTF-8 (byte 0xED) inside a string");
        row("above U+10FFFF", "\"\xf4\x90\x80\x80\"", 1, "invalid UTF-8 (byte 0xF4) inside a string");
        row("cut sequence", "\"\xe2\x82\"", 1, "invalid UTF-8 (byte 0xE2) inside a string");
        row("stray continuation", "\"a\x80\"", 2, "invalid UTF-8 (byte 0x80) inside a string");
        row("latin1", "\"caf\xe9\"", 4, "invalid UTF-8 (byte 0xE9) inside a string");
        row("utf8 outside string", "[\xc3\xa9]", 1, "unexpected byte 0xC3, expected a value");
    }
    void malformedInputIsRefusedWithItsOffset()
    {
        QFETCH(QByteArray, json);
        QFETCH(qulonglong, offset);
        QFETCH(QString, reason);
        const auto parsed
            = parseJson(std::string_view(json.constData(), static_cast<std::size_t>(json.size())));
        QVERIFY(!parsed);
        QCOMPARE(QString::fromStdString(parsed.error().message),
            QStringLiteral("invalid JSON at byte %1: %2").arg(offset).arg(reason));
        QCOMPARE(parsed.error().offset, std::optional<std::uint64_t>(offset));
    }

    void offsetsArePrintedForPeopleAndCanBeShifted()
    {
        const std::string text = std::string(1234, ' ') + "{\"key\" 1}";
        QCOMPARE(errorOf(text),
            std::string("invalid JSON at byte 1,241: unexpected '1', expected ':' after object key"));
        JsonParseLimits limits;
        limits.offsetBase = 1'000'000;
        const auto parsed = parseJson(text, limits);
        QVERIFY(!parsed);
        QCOMPARE(parsed.error().offset, std::optional<std::uint64_t>(1'001'241));
        QCOMPARE(parsed.error().message,
            std::string("invalid JSON at byte 1,001,241: unexpected '1', expected ':' after object key"));
    }

    void duplicateKeys()
    {
        const std::string text = R"({"a":1,"b":2,"a":3,"c":{"x":1,"x":2},"a":4,"b":5})";
        const auto parsed = parseJson(text);
        QVERIFY(parsed);
        // Kept in order, lookups give the first, and the repetition is detectable.
        QCOMPARE(parsed->size(), std::size_t {6});
        QCOMPARE(parsed->member("a").toInt64(), std::optional<std::int64_t>(1));
        QCOMPARE(parsed->duplicateKeys(), (std::vector<std::string> {"a", "b"}));
        QCOMPARE(parsed->member("c").duplicateKeys(), std::vector<std::string> {"x"});
        QVERIFY(JsonValue(1).duplicateKeys().empty());
        QCOMPARE(parsed->toJson(), text);

        JsonParseLimits strict;
        strict.allowDuplicateKeys = false;
        QCOMPARE(errorOf(text, strict),
            std::string("invalid JSON at byte 13: duplicate key \"a\" (first at byte 1)"));
        QVERIFY(parseJson(R"({"a":{"a":1},"b":[{"a":1},{"a":2}]})", strict));
    }

    void limits()
    {
        JsonParseLimits limits;
        limits.maxDepth = 5;
        QVERIFY(parseJson("[[[[[1]]]]]", limits));
        QVERIFY(parseJson(R"({"a":{"b":{"c":{"d":{}}}}})", limits));
        QCOMPARE(errorOf("[[[[[[1]]]]]]", limits),
            std::string("invalid JSON at byte 5: nesting deeper than 5 levels"));
        QCOMPARE(errorOf(R"({"a":{"b":{"c":{"d":{"e":[]}}}}})", limits),
            std::string("invalid JSON at byte 25: nesting deeper than 5 levels"));

        // Far past the default depth: refused, with no stack to overflow.
        const std::string deep(1'000'000, '[');
        QCOMPARE(errorOf(deep), std::string("invalid JSON at byte 512: nesting deeper than 512 levels"));
        std::string deepObject;
        for (int i = 0; i < 100'000; ++i)
            deepObject += "{\"a\":";
        QVERIFY(!parseJson(deepObject));
        // A depth limit beyond what the recursive destructor can take is clamped.
        limits.maxDepth = std::numeric_limits<std::size_t>::max();
        QCOMPARE(errorOf(deep, limits),
            std::string("invalid JSON at byte 10,000: nesting deeper than 10,000 levels"));

        JsonParseLimits small;
        small.maxBytes = 10;
        QVERIFY(parseJson("[1,2,3,4]", small));
        QCOMPARE(errorOf("[1,2,3,4,5]", small),
            std::string("invalid JSON at byte 10: the document is 11 bytes, more than the limit of 10"));

        JsonParseLimits few;
        few.maxValues = 4;
        QVERIFY(parseJson("[1,2,3]", few));
        QCOMPARE(errorOf("[1,2,3,4]", few),
            std::string("invalid JSON at byte 7: more than 4 values, the limit for one document"));
        QVERIFY(parseJson(R"({"a":[{}],"b":1})", few)); // containers count too
        QVERIFY(!parseJson(R"({"a":[{}],"b":[1]})", few));
    }

    // Every prefix of a document is incomplete: each must be refused with an offset inside the
    // prefix, never read past it, and never crash.
    // Strings are scanned sixteen bytes at a time: every byte value at every position of two
    // blocks and their tail must be read as it is in a string of its own, and refused where that is.
    void stringsReadEveryByteAtEveryPosition()
    {
        for (int byte = 0; byte < 256; ++byte) {
            const auto alone = parseJson("\"" + std::string(1, static_cast<char>(byte)) + "\"");
            for (std::size_t at = 0; at < 40; ++at) {
                std::string text(40, 'a');
                text[at] = static_cast<char>(byte);
                const auto parsed = parseJson("\"" + text + "\"");
                const std::string where = "byte " + std::to_string(byte) + " at " + std::to_string(at);
                if (byte == '"' || byte == '\\') { // ends the string, or escapes the next 'a'
                    QVERIFY2(!parsed, where.c_str());
                    continue;
                }
                QVERIFY2(bool(parsed) == bool(alone), where.c_str());
                if (parsed)
                    QVERIFY2(parsed->toString() == text, where.c_str());
                else
                    QVERIFY2(parsed.error().offset == std::optional<std::uint64_t>(at + 1), where.c_str());
            }
        }
    }

    // The writer, the parser and printableText share one scan for runs of printable ASCII, read
    // sixteen (or, without SSE2, eight: both are checked) bytes at a time and the last ones of a text as the
    // block that ends it: every byte value at every position of texts of every length up to three blocks,
    // scanned from inside them too, must stop the run exactly where a byte at a time would.
    void printableRunEndStopsWhereAByteAtATimeWould()
    {
        const auto byteAtATime = [](const std::string& text, std::size_t at, bool jsonStops) {
            while (at < text.size()) {
                const auto c = static_cast<unsigned char>(text[at]);
                if (c < 0x20 || c >= 0x7f || (jsonStops && (c == '"' || c == '\\')))
                    break;
                ++at;
            }
            return at;
        };
        int checked = 0;
        for (std::size_t length = 0; length <= 48; ++length) {
            for (std::size_t position = 0; position <= length; ++position) { // length: no stop at all
                for (int byte = 0; byte < 256; ++byte) {
                    if (position == length && byte > 0)
                        break;
                    std::string text(length, 'a');
                    if (position < length)
                        text[position] = static_cast<char>(byte);
                    const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
                    for (const std::size_t at :
                        {std::size_t {0}, std::size_t {1}, std::size_t {9}, std::size_t {17}}) {
                        if (at > length)
                            continue;
                        const std::size_t printable = printableRunEnd<>(bytes, at, length);
                        const std::size_t jsonPlain = printableRunEnd<'"', '\\'>(bytes, at, length);
                        // The scan machines without SSE2 use, here on every machine.
                        const std::size_t printableByWords = printablerun::runEndByWords<>(bytes, at, length);
                        const std::size_t jsonPlainByWords
                            = printablerun::runEndByWords<'"', '\\'>(bytes, at, length);
                        const std::size_t printableExpected = byteAtATime(text, at, false);
                        const std::size_t jsonPlainExpected = byteAtATime(text, at, true);
                        if (printable != printableExpected || jsonPlain != jsonPlainExpected
                            || printableByWords != printableExpected
                            || jsonPlainByWords != jsonPlainExpected) {
                            const QByteArray what = QByteArray("byte ") + QByteArray::number(byte) + " at "
                                + QByteArray::number(static_cast<qulonglong>(position)) + " of "
                                + QByteArray::number(static_cast<qulonglong>(length)) + " from "
                                + QByteArray::number(static_cast<qulonglong>(at));
                            QFAIL(what.constData());
                        }
                        ++checked;
                    }
                }
            }
        }
        QCOMPARE(checked, 1'160'361);
    }

    void everyTruncationIsRefused()
    {
        for (std::size_t length = 0; length < kSample.size(); ++length) {
            const std::string prefix
                = kSample.substr(0, length); // own copy: reads past it would show in ASan
            const auto parsed = parseJson(prefix);
            QVERIFY2(!parsed, qPrintable(QStringLiteral("prefix of %1 bytes parsed").arg(length)));
            QVERIFY(parsed.error().offset);
            QVERIFY(*parsed.error().offset <= length);
            QVERIFY(parsed.error().message.starts_with("invalid JSON at byte "));
        }
        QVERIFY(parseJson(kSample));
    }

    // Any byte replaced by any of the bytes that matter to the grammar: no crash, and whatever
    // parses writes back out as text that parses to the same value.
    void everySingleByteCorruptionIsSafe()
    {
        const std::string replacements
            = std::string("{}[]\":,\\u0-1eE.tfn \x01\x7f\x80\xbf\xc3\xed\xf0\xff") + std::string(1, '\0');
        int parsedCount = 0;
        for (std::size_t i = 0; i < kSample.size(); ++i) {
            for (const char replacement : replacements) {
                std::string corrupt = kSample;
                corrupt[i] = replacement;
                const auto parsed = parseJson(corrupt);
                if (!parsed) {
                    QVERIFY(parsed.error().offset && *parsed.error().offset <= corrupt.size());
                    continue;
                }
                ++parsedCount;
                const auto again = parseJson(parsed->toJson());
                QVERIFY(again);
                QVERIFY(*again == *parsed);
            }
        }
        QVERIFY(parsedCount > 0);
    }

    void writerCompactAndPretty()
    {
        auto build = [](JsonWriter& writer) {
            writer.beginObject();
            writer.member("name", "conv1.weight");
            writer.key("shape").beginArray().value(8).value(1).value(3).value(3).endArray();
            writer.member("numel", std::uint64_t {72});
            writer.member("scale", 0.5);
            writer.member("ok", true);
            writer.key("device").null();
            writer.key("empty_list").beginArray().endArray();
            writer.key("empty_map").beginObject().endObject();
            writer.key("nested").beginArray().beginObject().member("a", -1).endObject().endArray();
            writer.endObject();
        };
        JsonWriter compact;
        build(compact);
        QVERIFY(compact.ok());
        QVERIFY(compact.isComplete());
        QCOMPARE(compact.text(),
            std::string(
                R"({"name":"conv1.weight","shape":[8,1,3,3],"numel":72,"scale":0.5,"ok":true,"device":null,)"
                R"("empty_list":[],"empty_map":{},"nested":[{"a":-1}]})"));

        JsonWriter pretty(JsonStyle::Pretty);
        build(pretty);
        QVERIFY(pretty.ok());
        // The layout of Python's json.dumps(obj, indent=2).
        QCOMPARE(pretty.text(), std::string(R"({
  "name": "conv1.weight",
  "shape": [
    8,
    1,
    3,
    3
  ],
  "numel": 72,
  "scale": 0.5,
  "ok": true,
  "device": null,
  "empty_list": [],
  "empty_map": {},
  "nested": [
    {
      "a": -1
    }
  ]
})"));
        QVERIFY(*parseJson(pretty.text()) == *parseJson(compact.text()));

        JsonWriter scalar;
        scalar.value("top");
        QVERIFY(scalar.isComplete());
        QCOMPARE(scalar.takeText(), std::string("\"top\""));
    }

    // Keys spelled "name"_key are written from the blocks they carry: as key(name) writes the same
    // name, in both styles, at the lengths where the written form ("name": ) fills its blocks of
    // sixteen exactly or spills into the next.
    void compiledKeysAreWrittenAsOtherKeys()
    {
        using literals::operator""_key;
        const auto write = [](JsonStyle style, bool compiled) {
            JsonWriter json(style);
            json.beginObject();
            if (compiled)
                json.member(""_key, 1)
                    .member("twelve_bytes"_key, 2)
                    .member("thirteen_byte"_key, 3)
                    .key("nested"_key);
            else
                json.member(std::string_view(""), 1)
                    .member(std::string_view("twelve_bytes"), 2)
                    .member(std::string_view("thirteen_byte"), 3)
                    .key(std::string_view("nested"));
            json.beginObject();
            if (compiled)
                json.member("a"_key, true);
            else
                json.member(std::string_view("a"), true);
            json.endObject().endObject();
            return json.isComplete() ? json.text() : json.error();
        };
        QCOMPARE(write(JsonStyle::Compact, true),
            std::string(R"({"":1,"twelve_bytes":2,"thirteen_byte":3,"nested":{"a":true}})"));
        for (const JsonStyle style : {JsonStyle::Compact, JsonStyle::Pretty})
            QCOMPARE(write(style, true), write(style, false));
        JsonWriter twice;
        twice.beginObject().key("a"_key).key("b"_key);
        QVERIFY(!twice.ok());
    }

    void writerNumbers()
    {
        auto written = [](auto number) {
            JsonWriter writer;
            writer.value(number);
            return writer.takeText();
        };
        QCOMPARE(written(std::numeric_limits<std::int64_t>::min()), std::string("-9223372036854775808"));
        QCOMPARE(written(std::numeric_limits<std::uint64_t>::max()), std::string("18446744073709551615"));
        QCOMPARE(written(static_cast<short>(-7)), std::string("-7"));
        QCOMPARE(written(1.0), std::string("1.0"));
        QCOMPARE(written(-0.0), std::string("-0.0"));
        QCOMPARE(written(0.1), std::string("0.1"));
        QCOMPARE(written(1e300), std::string("1e+300"));
        QCOMPARE(written(5e-324), std::string("5e-324"));
        QCOMPARE(written(std::nan("")), std::string("null"));
        QCOMPARE(written(std::numeric_limits<double>::infinity()), std::string("null"));
        // Doubles read back bit for bit, and as doubles.
        for (const double value :
            {0.1, 1.0 / 3.0, 1e-7, 123456789012345680.0, 2.5e-308, 1.7976931348623157e308}) {
            const auto parsed = parseJson(written(value));
            QVERIFY(parsed && parsed->isDouble());
            QCOMPARE(parsed->toDouble(), value);
        }
    }

    void writerEscapesAndRepairsStrings()
    {
        JsonWriter writer;
        const std::string controls("\x00\x01\x1f\x7f", 4);
        writer.beginArray();
        writer.value(std::string_view(controls));
        writer.value("quote \" backslash \\ slash / newline \n tab \t cr \r bs \b ff \f");
        writer.value("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
        writer.value("bad \xff \xc0\x80 \xed\xa0\x80 \xe2\x82 end \xf0\x9f\x98");
        writer.endArray();
        QCOMPARE(writer.text(),
            std::string("[\"\\u0000\\u0001\\u001f\\u007f\","
                        "\"quote \\\" backslash \\\\ slash / newline \\n tab \\t cr \\r bs \\b ff \\f\","
                        "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\","
                        "\"bad \\ufffd \\ufffd\\ufffd \\ufffd\\ufffd\\ufffd \\ufffd\\ufffd end "
                        "\\ufffd\\ufffd\\ufffd\"]"));
        const auto parsed = parseJson(writer.text());
        QVERIFY(parsed);
        QCOMPARE(toQ(parsed->at(0).toString()), toQ(controls));
        QCOMPARE(parsed->at(3).toString(),
            std::string("bad \xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd "
                        "\xef\xbf\xbd\xef\xbf\xbd end \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"));

        // Keys get the same treatment.
        JsonWriter keys;
        keys.beginObject().member("k\xff\n", 1).endObject();
        QCOMPARE(keys.text(), std::string("{\"k\\ufffd\\n\":1}"));

        // Keys checked when compiled ("name"_key) are written as they are, beside keys that are
        // escaped, and misuse is still refused; a quote, DEL, a byte from 0x80 in a key spelled as
        // a plain string are escaped as before.
        using namespace ckpt::literals;
        JsonWriter literals(JsonStyle::Pretty);
        char buffer[16] = "b\"c";
        literals.beginObject()
            .member("plain"_key, 1)
            .member("q\"", 2)
            .member("\x7f", 3)
            .member("\xc3\xa9", 4)
            .member(buffer, 5)
            .key(""_key)
            .value(6)
            .endObject();
        QVERIFY(literals.ok());
        JsonWriter twice;
        twice.beginObject().key("a"_key).key("b"_key);
        QCOMPARE(twice.error(), std::string("JsonWriter: key() twice without a value"));
        QCOMPARE(literals.text(),
            std::string("{\n  \"plain\": 1,\n  \"q\\\"\": 2,\n  \"\\u007f\": 3,\n  \"\xc3\xa9\": 4,\n"
                        "  \"b\\\"c\": 5,\n  \"\": 6\n}"));
    }

    // The writer copies runs of plain characters eight bytes at a time: every byte value, at every
    // position of a word and after a run, must still be escaped exactly as one byte at a time would,
    // in values and in keys (which take their own path), compact and pretty.
    void writerEscapesEveryByteAtEveryPosition()
    {
        // One byte on its own, as the format says: a lone byte >= 0x80 is never valid UTF-8.
        const auto escapedByte = [](unsigned char c) -> std::string {
            static const char* hex = "0123456789abcdef";
            switch (c) {
            case '"':
                return "\\\"";
            case '\\':
                return "\\\\";
            case '\b':
                return "\\b";
            case '\f':
                return "\\f";
            case '\n':
                return "\\n";
            case '\r':
                return "\\r";
            case '\t':
                return "\\t";
            default:
                if (c >= 0x80)
                    return "\\ufffd";
                if (c < 0x20 || c == 0x7f)
                    return std::string("\\u00") + hex[c >> 4] + hex[c & 0xF];
                return std::string(1, static_cast<char>(c));
            }
        };
        int checked = 0;
        for (int byte = 0; byte < 256; ++byte) {
            for (std::size_t position = 0; position < 18; ++position) {
                for (const std::size_t length : {position + 1, std::size_t {25}}) {
                    std::string text(length, 'a');
                    text[position] = static_cast<char>(byte);
                    std::string expected = "\"";
                    for (const char c : text)
                        expected += escapedByte(static_cast<unsigned char>(c));
                    expected += '"';
                    const QByteArray what = QByteArray("byte ") + QByteArray::number(byte) + " at "
                        + QByteArray::number(static_cast<qulonglong>(position)) + " of "
                        + QByteArray::number(static_cast<qulonglong>(length));

                    std::string appended;
                    appendJsonString(appended, text);
                    QVERIFY2(appended == expected, what.constData());
                    JsonWriter value;
                    value.value(std::string_view(text));
                    QVERIFY2(value.text() == expected, what.constData());
                    JsonWriter compactKey;
                    compactKey.beginObject().member(text, 1).endObject();
                    QVERIFY2(compactKey.text() == "{" + expected + ":1}", what.constData());
                    JsonWriter prettyKey(JsonStyle::Pretty);
                    prettyKey.beginObject().member("first", 0).member(text, 1).endObject();
                    QVERIFY2(
                        prettyKey.text() == "{\n  \"first\": 0,\n  " + expected + ": 1\n}", what.constData());
                    ++checked;
                }
            }
        }
        QCOMPARE(checked, 256 * 18 * 2);
    }

    // Long texts: a megabyte without an escape is copied as it is; one of nothing but escapes and
    // invalid bytes is escaped whole (both past any buffer or flush size).
    void writerLongTexts()
    {
        std::string plain(std::size_t {1} << 20, 'x');
        for (std::size_t i = 0; i < plain.size(); i += 7)
            plain[i] = static_cast<char>(' ' + i % 95); // every printable, '"' and '\\' excepted
        std::erase_if(plain, [](char c) { return c == '"' || c == '\\'; });
        JsonWriter plainWriter;
        plainWriter.beginArray().value(std::string_view(plain)).endArray();
        QVERIFY(plainWriter.text() == "[\"" + plain + "\"]");

        std::string escapes;
        std::string expected = "\"";
        for (int i = 0; i < 100'000; ++i) {
            const char c = "\"\\\n\x01\xff"[i % 5];
            escapes += c;
            expected += c == '"' ? "\\\""
                : c == '\\'      ? "\\\\"
                : c == '\n'      ? "\\n"
                : c == '\x01'    ? "\\u0001"
                                 : "\\ufffd";
        }
        expected += '"';
        std::ostringstream stream;
        {
            JsonWriter streamed(stream);
            streamed.value(std::string_view(escapes));
        }
        QVERIFY(stream.str() == expected);
        const auto parsed = parseJson(stream.str());
        QVERIFY(parsed);
        QCOMPARE(parsed->toString().size(), std::size_t {100'000} / 5 * (4 + 3)); // U+FFFD is 3 bytes
    }

    void writerMisuseIsReportedNotFatal()
    {
        JsonWriter valueWithoutKey;
        valueWithoutKey.beginObject().value(1).endObject();
        QVERIFY(!valueWithoutKey.ok());
        QCOMPARE(valueWithoutKey.error(),
            std::string("JsonWriter: a number inside an object without a key() first"));
        QCOMPARE(valueWithoutKey.text(), std::string("{}"));

        JsonWriter unbalanced;
        unbalanced.beginArray().endObject();
        QCOMPARE(unbalanced.error(), std::string("JsonWriter: endObject() without a matching beginObject()"));
        QVERIFY(!unbalanced.isComplete());

        JsonWriter keyOutside;
        keyOutside.key("a");
        QCOMPARE(keyOutside.error(), std::string("JsonWriter: key() outside an object"));

        JsonWriter dangling;
        dangling.beginObject().key("a").endObject();
        QCOMPARE(dangling.error(), std::string("JsonWriter: endObject() after a key() without its value"));

        JsonWriter twice;
        twice.value(1).value(2);
        QCOMPARE(twice.error(), std::string("JsonWriter: a number after the top-level value was complete"));
        QCOMPARE(twice.text(), std::string("1"));
    }

    void streamWriterMatchesStringWriter()
    {
        auto build = [](JsonWriter& writer) {
            writer.beginArray();
            for (int i = 0; i < 20'000; ++i)
                writer.beginObject().member("index", i).member("name", "tensor.\xc3\xa9").endObject();
            writer.endArray();
        };
        JsonWriter toString(JsonStyle::Pretty);
        build(toString);
        std::ostringstream stream;
        {
            JsonWriter toStream(stream, JsonStyle::Pretty);
            build(toStream);
            QVERIFY(toStream.isComplete());
        }
        QVERIFY(toString.text().size() > std::size_t {256} * 1024);
        QCOMPARE(stream.str(), toString.text());
    }

    void valuesBuildAndRoundTrip()
    {
        JsonValue doc;
        QVERIFY(doc.insert("b", 1));
        QVERIFY(doc.insert("a", JsonValue::emptyArray()));
        QVERIFY(doc.find("a")->append("x"));
        QVERIFY(doc.find("a")->append(nullptr));
        QVERIFY(doc.set("b", 2.5));
        QVERIFY(doc.set("c", "text"));
        QVERIFY(!doc.append(1)); // an object is not an array
        QVERIFY(!JsonValue(1).array());
        QCOMPARE(doc.toJson(), std::string(R"({"b":2.5,"a":["x",null],"c":"text"})"));
        QCOMPARE(doc.object()->size(), std::size_t {3});

        QRandomGenerator random(20240611);
        for (int i = 0; i < 2000; ++i) {
            const JsonValue value = randomValue(random, 0, true);
            for (const JsonStyle style : {JsonStyle::Compact, JsonStyle::Pretty}) {
                const std::string text = value.toJson(style);
                const auto parsed = parseJson(text);
                QVERIFY2(parsed, parsed ? "" : parsed.error().message.c_str());
                QVERIFY2(*parsed == value, text.c_str());
            }
        }
        // Arbitrary bytes in strings: the output still parses, and parses to a fixed point.
        for (int i = 0; i < 2000; ++i) {
            const JsonValue value = randomValue(random, 0, false);
            const auto parsed = parseJson(value.toJson());
            QVERIFY(parsed);
            const auto again = parseJson(parsed->toJson());
            QVERIFY(again);
            QVERIFY(*again == *parsed);
        }
    }

    // Python's json module is an independent reader: it must accept what the writer produces and
    // give back the same document.
    void pythonReadsWhatTheWriterWrites()
    {
        const QString python = QStringLiteral(CKPT_LEGACY_PYTHON);
        if (python.isEmpty() || QStandardPaths::findExecutable(python).isEmpty())
            QSKIP("no python3 to cross-check with");
        QRandomGenerator random(7);
        JsonValue documents = JsonValue::emptyArray();
        for (int i = 0; i < 200; ++i)
            documents.append(randomValue(random, 0, true));
        documents.append(*parseJson(kSample));
        for (const JsonStyle style : {JsonStyle::Compact, JsonStyle::Pretty}) {
            QProcess process;
            process.start(python,
                {QStringLiteral("-c"),
                    QStringLiteral("import json,sys; d=json.loads(sys.stdin.buffer.read().decode('utf-8')); "
                                   "sys.stdout.write(json.dumps(d, ensure_ascii=True))")});
            QVERIFY(process.waitForStarted());
            process.write(toQ(documents.toJson(style)));
            process.closeWriteChannel();
            QVERIFY(process.waitForFinished(60'000));
            QCOMPARE(process.exitCode(), 0);
            const QByteArray output = process.readAllStandardOutput();
            const auto parsed
                = parseJson(std::string_view(output.constData(), static_cast<std::size_t>(output.size())));
            QVERIFY2(parsed, parsed ? "" : parsed.error().message.c_str());
            QVERIFY(*parsed == documents);
        }
    }
};

QTEST_APPLESS_MAIN(TestJson)
#include "tst_json.moc"
