// SPDX-License-Identifier: MIT
// The one Python-literal quoter and the terminal-safe text of the project (issue 9, issue 12 bug
// 2): every literal parses with real Python and means exactly the bytes it quotes, whatever a
// hostile file put in a name (quotes, newlines, terminal escapes, direction overrides, bytes that
// are not UTF-8), and every snippet the plan prints compiles with them in it.
#include "core/base/escaping.h"
#include "core/base/pythonliteral.h"
#include "core/base/textformat.h"
#include "core/plan/placementplan.h"
#include "core/read/checkpointreader.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

using namespace ckpt;
using namespace std::string_literals;

namespace {

// Names a hostile checkpoint can hold. std::string literals keep the embedded NUL.
const std::vector<std::string>& hostileTexts()
{
    static const std::vector<std::string> texts {"plain.weight"s, "quote'"s, "double\"quote"s, "back\\slash"s,
        "ends with a backslash\\"s, "'''"s, "\"\"\""s, "new\nline"s, "carriage\rreturn"s, "tab\there"s,
        "\x1b[30A\x1b[Jcursor up and clear"s, "\x1b[8mhidden"s, "nul\0byte"s, "del\x7f"s,
        "c1 \xc2\x85 \xc2\x9b"
        "2J"s,
        "bidi \xe2\x80\xae \xe2\x81\xa6 isolate"s, "separators \xe2\x80\xa8 \xe2\x80\xa9"s,
        "bom \xef\xbb\xbf"s, "emoji \xf0\x9f\x98\x80 and \xc3\xa9"s, "invalid \xff\xfe bytes"s,
        "cut \xe2\x82"s, "surrogate \xed\xa0\x80"s, "overlong \xc0\xaf"s, ""s};
    return texts;
}

QByteArray hexOf(std::string_view bytes)
{
    return QByteArray(bytes.data(), static_cast<qsizetype>(bytes.size())).toHex();
}

// Runs Python on `script` with `input` on stdin; returns stderr+stdout on failure, empty on success.
QString runPython(const QString& script, const QByteArray& input)
{
    QProcess python;
    python.start(QStringLiteral(CKPT_LEGACY_PYTHON), {QStringLiteral("-c"), script});
    python.write(input);
    python.closeWriteChannel();
    if (!python.waitForFinished(120'000))
        return QStringLiteral("python did not finish");
    if (python.exitStatus() != QProcess::NormalExit || python.exitCode() != 0)
        return QString::fromUtf8(python.readAllStandardError() + python.readAllStandardOutput());
    return {};
}

} // namespace

class TestPythonLiteral : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void printableTextEscapesEveryControlCharacter()
    {
        QCOMPARE(printableText("model.layers.0.weight"), "model.layers.0.weight"s);
        QCOMPARE(printableText("\x1b[30A\x1b[J"), "\\x1b[30A\\x1b[J"s);
        QCOMPARE(printableText("a\nb\rc\td"), "a\\nb\\rc\\td"s);
        QCOMPARE(printableText("nul\0del\x7f"s), "nul\\x00del\\x7f"s);
        QCOMPARE(printableText("csi \xc2\x9b"
                               "2J"),
            "csi \\x9b2J"s); // U+009B, a one-character CSI
        QCOMPARE(printableText("rtl \xe2\x80\xae!"), "rtl \\u202e!"s);
        QCOMPARE(printableText("bad \xff"), "bad \\xff"s);
        QCOMPARE(printableText("caf\xc3\xa9 \xf0\x9f\x98\x80"),
            "caf\xc3\xa9 \xf0\x9f\x98\x80"s); // printable stays
        for (const std::string& text : hostileTexts()) {
            const std::string shown = printableText(text);
            for (std::size_t i = 0; i < shown.size();) {
                const Utf8Step step = decodeUtf8At(shown, i);
                QVERIFY2(step.valid && !isControlCodePoint(step.codePoint), shown.c_str());
                i += step.length;
            }
        }
    }

    // The report's appenders write into a buffer that already holds text: they add to it, and
    // add exactly what printableText returns.
    void appendersAddToTheBuffer()
    {
        std::string out = "name: ";
        appendPrintableText(out, "a\nb \xff");
        QCOMPARE(out, "name: a\\nb \\xff"s);
        for (const std::string& text : hostileTexts()) {
            std::string appended = "> ";
            appendPrintableText(appended, text);
            QCOMPARE(appended, "> " + printableText(text));
        }
        // A line built in the buffer and made printable where it stands: the same bytes as the
        // line appended through appendPrintableText, whatever its length (the scan's last block
        // reaches back into what came before, a control character there included, and leaves it).
        for (const std::string& text : hostileTexts()) {
            for (const std::string& before : {"\x1b"s, "earlier line\x1b\n"s}) {
                for (std::size_t padding = 0; padding <= 17; ++padding) {
                    const std::string line = std::string(padding, ' ') + text + " tail";
                    std::string expected = before;
                    appendPrintableText(expected, line);
                    std::string inPlace = before + line;
                    makePrintableFrom(inPlace, before.size());
                    QCOMPARE(inPlace, expected);
                }
            }
        }
        std::string shape = "shape ";
        appendIntegerList(shape, std::vector<std::int64_t> {256, -1, 9223372036854775807});
        appendIntegerList(shape, std::vector<std::int64_t> {});
        QCOMPARE(shape, "shape [256, -1, 9223372036854775807][]"s);
    }

    void utf8IsStrictLikePython()
    {
        QVERIFY(isValidUtf8("caf\xc3\xa9"));
        QVERIFY(!isValidUtf8("\xc0\xaf")); // overlong '/'
        QVERIFY(!isValidUtf8("\xed\xa0\x80")); // a surrogate
        QVERIFY(!isValidUtf8("\xf4\x90\x80\x80")); // above U+10FFFF
        QVERIFY(!isValidUtf8("\xe2\x82")); // cut
    }

    // Every literal is one Python constant that evaluates to exactly the quoted bytes (a str
    // encoded back with surrogateescape, which is how a path with non-UTF-8 bytes reaches open()).
    void literalsRoundTripThroughPython()
    {
        QJsonArray cases;
        for (const std::string& text : hostileTexts()) {
            const std::string str = pythonStringLiteral(text);
            const std::string bytes = pythonBytesLiteral(text);
            // Nothing that acts on a terminal or ends a line is left in a literal.
            for (const std::string& literal : {str, bytes})
                QVERIFY2(printableText(literal) == literal, literal.c_str());
            cases.append(QJsonArray {
                QString::fromStdString(str), QString::fromLatin1(hexOf(text)), QStringLiteral("str")});
            cases.append(QJsonArray {
                QString::fromStdString(bytes), QString::fromLatin1(hexOf(text)), QStringLiteral("bytes")});
        }
        const QString script = QStringLiteral(
            "import ast, json, sys\n"
            "cases = json.load(sys.stdin)\n"
            "for literal, expected, kind in cases:\n"
            "    tree = ast.parse(literal, mode='eval')\n"
            "    assert isinstance(tree.body, ast.Constant), literal\n"
            "    value = ast.literal_eval(literal)\n"
            "    data = value.encode('utf-8', 'surrogateescape') if kind == 'str' else value\n"
            "    assert data == bytes.fromhex(expected), (literal, data, expected)\n"
            "print(len(cases))\n");
        const QString failure = runPython(script, QJsonDocument(cases).toJson(QJsonDocument::Compact));
        QVERIFY2(failure.isEmpty(), qPrintable(failure));
    }

    // Issue 12, bug 2: the map_location and per-tensor snippets compile, and carry every hostile
    // tensor name and the hostile path exactly.
    void planSnippetsCompileWithHostileNames()
    {
        const Checkpoint checkpoint
            = readCheckpoint(CKPT_SOURCE_DIR "/tests/data/malformed/hostile_names.pt");
        QVERIFY(checkpoint.tensors.size() >= 7);
        const std::string path = "/tmp/we'ird\ndir\x1b[2J/\xff model.pt"s;

        // All but the first tensor move: no tag mapping says that, so the per-tensor snippet is
        // written, with every moved name in it.
        PlacementPlan perTensor(checkpoint);
        for (std::size_t t = 1; t < checkpoint.tensors.size(); ++t)
            perTensor.apply({PlacementRule::Kind::MoveTensor, checkpoint.tensors[t].name.str(), "cuda:0"});
        QVERIFY(!perTensor.asTagMapping().has_value());
        PlacementPlan mapping(checkpoint);
        mapping.apply({PlacementRule::Kind::MapTag, "cuda:1", "cpu"});
        QVERIFY(mapping.asTagMapping().has_value());

        for (const PlacementPlan* plan : {&perTensor, &mapping}) {
            const std::string snippet = plan->asPython(path);
            QJsonArray expected;
            expected.append(QString::fromLatin1(hexOf(path)));
            // (Names holding '[' are taken for parts of composite tensors, which move with them.)
            if (plan == &perTensor)
                for (std::size_t t = 1; t < checkpoint.tensors.size(); ++t)
                    if (checkpoint.tensors[t].name.find('[') == std::string::npos)
                        expected.append(QString::fromLatin1(hexOf(checkpoint.tensors[t].name)));
            QVERIFY(expected.size() >= (plan == &perTensor ? 5 : 1));
            const QString script
                = QStringLiteral("import ast, json, sys\n"
                                 "data = sys.stdin.buffer.read()\n"
                                 "split = data.index(b'\\0')\n"
                                 "expected = set(bytes.fromhex(h) for h in json.loads(data[:split]))\n"
                                 "source = data[split + 1:].decode('utf-8')\n"
                                 "compile(source, 'snippet', 'exec')\n"
                                 "found = set()\n"
                                 "for node in ast.walk(ast.parse(source)):\n"
                                 "    if isinstance(node, ast.Constant) and isinstance(node.value, str):\n"
                                 "        found.add(node.value.encode('utf-8', 'surrogateescape'))\n"
                                 "missing = expected - found\n"
                                 "assert not missing, missing\n");
            QByteArray input = QJsonDocument(expected).toJson(QJsonDocument::Compact);
            input.append('\0');
            input.append(snippet.data(), static_cast<qsizetype>(snippet.size()));
            const QString failure = runPython(script, input);
            QVERIFY2(failure.isEmpty(),
                qPrintable(failure + QStringLiteral("\n") + QString::fromStdString(snippet)));
            // Line breaks only where the snippet means them: each hostile name stays on one line.
            for (const TensorEntry& tensor : checkpoint.tensors)
                QVERIFY(snippet.find(std::string(tensor.name)) == std::string::npos
                    || tensor.name.find('\n') == std::string::npos);
        }
    }
};

QTEST_GUILESS_MAIN(TestPythonLiteral)
#include "tst_pythonliteral.moc"
