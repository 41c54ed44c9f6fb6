/// The sum of every sample of metric `name` whose labels contain all of `labels` (`outcome="verified"`), scraped
/// from a Prometheus text endpoint at `url`; nil when the scrape fails.
public func scrapedMetricSum(_ url: String, _ name: String, labels: [String] = []) async -> Double? {
    guard let response = try? await TestHTTPClient.send("GET", url, timeout: 5), response.status == 200 else {
        return nil
    }
    var sum = 0.0
    for line in response.text.split(separator: "\n") where !line.hasPrefix("#") {
        let parts = line.split(separator: " ")
        guard parts.count == 2 else { continue }
        let series = parts[0]
        let metricName = series.split(separator: "{", maxSplits: 1).first.map(String.init) ?? ""
        guard metricName == name, labels.allSatisfy({ series.contains($0) }), let value = Double(parts[1]) else {
            continue
        }
        sum += value
    }
    return sum
}
