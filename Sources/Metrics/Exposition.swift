/// The Prometheus text exposition format 0.0.4: escaping and number formatting.
enum Exposition {
    static func header(name: String, help: String, type: MetricType, into out: inout String) {
        out += "# HELP " + name + " " + escapeHelp(help) + "\n"
        out += "# TYPE " + name + " " + type.rawValue + "\n"
    }

    /// `name{label="value",…} value\n`; braces are omitted without labels.
    static func sample(name: String, labels: [String], values: [String], value: String, into out: inout String) {
        out += name
        if !labels.isEmpty {
            out += "{"
            for (i, (label, v)) in zip(labels, values).enumerated() {
                if i > 0 { out += "," }
                out += label + "=\"" + escapeLabelValue(v) + "\""
            }
            out += "}"
        }
        out += " " + value + "\n"
    }

    /// HELP text: backslash and line feed are escaped.
    static func escapeHelp(_ s: String) -> String {
        guard s.contains(where: { $0 == "\\" || $0 == "\n" }) else { return s }
        var out = ""
        for c in s {
            switch c {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default: out.append(c)
            }
        }
        return out
    }

    /// Label values: backslash, double quote and line feed are escaped.
    static func escapeLabelValue(_ s: String) -> String {
        guard s.contains(where: { $0 == "\\" || $0 == "\n" || $0 == "\"" }) else { return s }
        var out = ""
        for c in s {
            switch c {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\"": out += "\\\""
            default: out.append(c)
            }
        }
        return out
    }

    static func format(_ value: UInt64) -> String { String(value) }

    /// Integral values without a fraction (`3`, not `3.0`); `+Inf`, `-Inf`, `NaN` as Prometheus spells them.
    static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}
